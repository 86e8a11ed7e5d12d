/** The web console's entry: mounts the app on #app. */
import { render } from 'preact';
import './console.css';

const root = document.getElementById('app');
if (root) render(<p>console</p>, root);
