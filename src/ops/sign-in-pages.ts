/** The few server-made pages of sign-in (refused, failed, unavailable), in the console's style. */

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function signInPage(title: string, message: string, retry = false): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(title)} · rentbridge ops</title>
    <link rel="stylesheet" href="../console.css" />
  </head>
  <body>
    <main>
      <section class="card narrow" id="sign-in-problem">
        <h1>${escapeHtml(title)}</h1>
        <p>${escapeHtml(message)}</p>
        <p>${retry ? '<a href="login">Sign in again</a> · ' : ''}<a href="../">Back to the console</a></p>
      </section>
    </main>
  </body>
</html>
`;
}
