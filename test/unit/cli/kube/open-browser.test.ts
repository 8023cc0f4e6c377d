import { expect } from 'chai';
import { browserCommand } from '../../../../api/cli/kube/open-browser.js';

const URL_ = 'https://box.example/auth/authorize?a=1&b=$(rm -rf ~)';

describe('opening the sign-in page', function () {
  it('runs $BROWSER through the shell (it may carry options), the address as an argument of its own', function () {
    expect(browserCommand({ BROWSER: 'firefox --new-tab', DISPLAY: ':0' }, URL_)).to.deep.equal({
      file: '/bin/sh',
      args: ['-c', 'firefox --new-tab "$1"', 'sh', URL_],
    });
  });

  it('else xdg-open on a desktop (X11 or Wayland), and nothing without one', function () {
    expect(browserCommand({ DISPLAY: ':0' }, URL_)).to.deep.equal({ file: 'xdg-open', args: [URL_] });
    expect(browserCommand({ WAYLAND_DISPLAY: 'wayland-0' }, URL_)).to.deep.equal({ file: 'xdg-open', args: [URL_] });
    expect(browserCommand({ BROWSER: ' ' }, URL_)).to.equal(undefined);
    expect(browserCommand({}, URL_)).to.equal(undefined);
  });
});
