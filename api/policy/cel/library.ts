// @bufbuild/cel, its strings extension, the protobuf runtime and the schema of its syntax tree:
// some 4 MB of a process's heap and 14 MB of its memory, required at the first CEL expression a
// process compiles or value it converts, never at the start (a box without CEL policies or claims
// never loads them; test/integration/idle-modules.test.ts). Required from their CommonJS builds,
// so that compiling stays synchronous; every use at run time goes through here, so the process
// holds one copy and a value of one copy never meets the functions of another.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

type Cel = typeof import('@bufbuild/cel');

export interface CelLibrary extends Cel {
  strings: (typeof import('@bufbuild/cel/ext'))['strings'];
  create: (typeof import('@bufbuild/protobuf'))['create'];
  ExprSchema: (typeof import('@bufbuild/cel-spec/cel/expr/syntax_pb.js'))['ExprSchema'];
}

let library: CelLibrary | undefined;

export function cel(): CelLibrary {
  library ??= {
    ...(require('@bufbuild/cel') as Cel),
    strings: (require('@bufbuild/cel/ext') as typeof import('@bufbuild/cel/ext')).strings,
    create: (require('@bufbuild/protobuf') as typeof import('@bufbuild/protobuf')).create,
    ExprSchema: (require('@bufbuild/cel-spec/cel/expr/syntax_pb.js') as typeof import('@bufbuild/cel-spec/cel/expr/syntax_pb.js'))
      .ExprSchema,
  };
  return library;
}
