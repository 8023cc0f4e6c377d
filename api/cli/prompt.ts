// Questions on the terminal. A password is read with echo off (raw mode) when
// stdin is a terminal; from a pipe, answers are read a line at a time.
export class Prompter {
  private buffer = '';
  private ended = false;
  private waiting: (() => void) | undefined;
  private readonly onData = (chunk: Buffer | string): void => {
    this.buffer += chunk.toString();
    this.waiting?.();
  };
  private readonly onEnd = (): void => {
    this.ended = true;
    this.waiting?.();
  };

  constructor(
    private readonly input: NodeJS.ReadStream = process.stdin,
    private readonly output: NodeJS.WriteStream = process.stdout,
  ) {
    input.on('data', this.onData);
    input.on('end', this.onEnd);
  }

  close(): void {
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    if (this.input.isTTY) this.input.setRawMode(false);
    this.input.pause();
  }

  private async more(): Promise<void> {
    if (this.ended) throw new Error('input ended');
    await new Promise<void>((resolve) => {
      this.waiting = resolve;
    });
    this.waiting = undefined;
  }

  /** Everything until the input ends (a pipe, or Ctrl-D on a terminal). */
  async readAll(): Promise<string> {
    while (!this.ended) await this.more();
    const all = this.buffer;
    this.buffer = '';
    return all;
  }

  /** A line typed with echo (the terminal shows it). */
  async ask(question: string): Promise<string> {
    this.output.write(question);
    for (;;) {
      const newline = this.buffer.search(/\r?\n|\r/);
      if (newline >= 0) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline).replace(/^(\r\n|\n|\r)/, '');
        return line;
      }
      await this.more();
    }
  }

  /** A line typed without echo. Ctrl-C aborts. */
  async askHidden(question: string): Promise<string> {
    if (!this.input.isTTY) return this.ask(question);
    // Echo off before the prompt shows, so type-ahead is not echoed either.
    this.input.setRawMode(true);
    this.output.write(question);
    let answer = '';
    try {
      for (;;) {
        while (this.buffer.length) {
          const ch = this.buffer[0]!;
          this.buffer = this.buffer.slice(1);
          if (ch === '\r' || ch === '\n') {
            this.output.write('\n');
            return answer;
          }
          if (ch === '\u0003') throw new Error('cancelled');
          if (ch === '\u007f' || ch === '\b') answer = answer.slice(0, -1);
          else if (ch >= ' ') answer += ch;
        }
        await this.more();
      }
    } finally {
      this.input.setRawMode(false);
    }
  }
}
