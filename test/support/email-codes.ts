// Sign-in codes by email as a test reads them: from the mails the box sends to the test's SMTP
// server (./smtp.ts), never from the box.
import { expect } from 'chai';
import type { JsonResponse } from './box.js';
import type { ReceivedMail, TestSmtp } from './smtp.js';

/** Whether a received mail is one carrying a sign-in code. */
export const isCodeMail = (m: ReceivedMail): boolean => /sign-in code/.test(m.parsed.subject ?? '');

/** Does `ask` (which makes the box mail a code to `email`), then waits for that new mail: its code, and the page `ask` answered. */
export async function mailedCode(
  smtp: TestSmtp,
  email: string,
  ask: () => Promise<JsonResponse>,
): Promise<{ code: string; page: JsonResponse }> {
  const before = smtp.mailsTo(email).filter(isCodeMail).length;
  const page = await ask();
  expect(page.status, page.text).to.equal(200);
  const mail = await smtp.waitForMail(
    (m) => m.to.includes(email) && isCodeMail(m) && smtp.mailsTo(email).filter(isCodeMail).indexOf(m) >= before,
  );
  const code = /Your code: (\d{6})/.exec(mail.parsed.text ?? '')?.[1];
  expect(code, mail.parsed.text).to.be.a('string');
  return { code: code!, page };
}
