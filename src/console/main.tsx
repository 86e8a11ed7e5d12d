/** The web console's entry: mounts the app on #app and starts following the server. */
import { render } from 'preact';
import { App } from './app.js';
import { ConsoleController } from './controller.js';
import './console.css';

const root = document.getElementById('app');
if (root) {
  root.replaceChildren();
  const controller = new ConsoleController();
  render(<App controller={controller} />, root);
  controller.start();
}
