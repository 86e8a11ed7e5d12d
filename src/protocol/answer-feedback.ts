/**
 * The user's feedback on an answer to a tool call (an extension of ToolCallConfirmation,
 * field `feedback`): a note for the model. It may come inside the confirmation's DataPart, or
 * as a text part of the same message when that message holds exactly one confirmation; the
 * two at once, or a text part beside several confirmations, are refused (each answer's note
 * goes in its own DataPart). The card shown to clients never carries it.
 */
import { invalidParams } from './errors.js';

/** The longest feedback accepted, in characters (Unicode code points). */
export const MAX_FEEDBACK_CHARS = 4096;

/**
 * Control characters other than tab, line feed and carriage return (C0, DEL, C1): feedback is
 * text a person typed. The pause's inputSchema carries the same pattern (runtime/pause.ts).
 */
export const FEEDBACK_PATTERN = '^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$';
const ALLOWED = new RegExp(FEEDBACK_PATTERN, 'u');

/** Checks one feedback text; `at` names where it came from. Throws invalidParams. */
export function checkFeedback(text: string, at: string): string {
  const chars = [...text].length;
  if (chars > MAX_FEEDBACK_CHARS) {
    throw invalidParams(`${at} is ${chars} characters long; feedback may be at most ${MAX_FEEDBACK_CHARS} characters`);
  }
  if (!ALLOWED.test(text)) {
    const bad = [...text].find((c) => !ALLOWED.test(c)) ?? '';
    const code = `U+${(bad.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw invalidParams(`${at} contains a control character (${code}); feedback may hold text, tabs and line breaks only`);
  }
  return text;
}

/**
 * Gives the message's text (`text`, already trimmed; "" when none) to the one answer as its
 * feedback (`at`: where that answer is). Throws invalidParams when the text cannot be placed:
 * beside several answers, or beside an answer that carries feedback of its own.
 */
export function attachTextFeedback(answers: Array<{ feedback?: string }>, text: string, at: string): void {
  if (text === '' || answers.length === 0) return;
  if (answers.length > 1) {
    throw invalidParams(
      `message: a text part beside ${answers.length} confirmations is ambiguous; ` +
        'put each answer\'s note in the "feedback" field of its own DataPart',
    );
  }
  const only = answers[0] as { feedback?: string };
  if (only.feedback !== undefined) {
    throw invalidParams(`${at}.feedback: the message also has a text part; send the feedback once, in one of the two`);
  }
  only.feedback = checkFeedback(text, 'message text (the feedback of the answer beside it)');
}
