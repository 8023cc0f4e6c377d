// The floors of the repository's TypeScript as allow-lists, read from the READMEs that state them
// (api/README.md says how to write them): a file may import its own place and what its place's
// README names after "May import:", nothing else. A folder whose README has no such line has no
// place yet: its files, and every import of them, are refused until it is placed. The rule reads
// the READMEs when the lint starts, so a README and what the lint allows cannot disagree.
//
// Places. Each top folder of api/ with a README.md that has a "May import:" line is one; so are
// the files of api/ itself that api/README.md names before "may import:" (the composition root,
// the public module), and the rest of them, the base (`*.ts`). Outside api/, each top folder of
// the repository with such a README is one (operator/, test/). Names in an api/ README are
// relative to api/; names in any other README to the repository's root.
//
// Floors. A place's floor is one above the highest place its own "May import:" sentence names
// for its values (a file's "may also import:" and a "(types only" name do not raise it): the
// base stands on floor 0, the composition root on the top one. The second rule, `floors/layers`,
// reads the import graph of api/ and operator/ and refuses what the first lets through a README:
// an import that climbs (to a place on the same floor or a higher one) unless it takes types
// only, more than MAX_CLIMBS such climbs in all, and every import circle.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One sentence of a README that gives files a rule. */
const RULE_SENTENCE = /(?:^|\s)(May import|may import|may also import):\s/;

/** A README's sentences, each with the names it writes in backticks and the text around them. */
function sentencesOf(text) {
  const names = [];
  // Names hold dots (`sign-in.ts`): they are set aside before the text is cut at its full stops.
  const plain = text.replace(/`([^`\n]+)`/g, (_, name) => `\uE000${names.push(name) - 1}\uE000`);
  return plain
    .split(/\n\s*\n/)
    .flatMap((paragraph) => paragraph.replace(/\s+/g, ' ').split(/\.(?:\s|$)/))
    .map((sentence) => ({ sentence, names }));
}

/** The names in backticks of a piece of a sentence, each with whether "(types only" follows it. */
function namesIn(piece, names) {
  return [...piece.matchAll(/\uE000(\d+)\uE000(\s*\(types only)?/g)].map((m) => ({ name: names[Number(m[1])], typesOnly: !!m[2] }));
}

/** The rules a README gives: for its folder ("May import:"), or for the files it names ("`x.ts` may import:"). */
function rulesOf(readme) {
  if (!fs.existsSync(readme)) return [];
  return sentencesOf(fs.readFileSync(readme, 'utf8')).flatMap(({ sentence, names }) => {
    const found = RULE_SENTENCE.exec(sentence);
    if (!found) return [];
    const before = sentence.slice(0, found.index);
    const targets = namesIn(sentence.slice(found.index + found[0].length), names);
    if (found[1] === 'May import') return [{ folder: true, targets }];
    return [{ files: namesIn(before, names).map((n) => n.name), also: found[1] === 'may also import', targets }];
  });
}

/**
 * Every rule the READMEs of the repository at `root` give, with its README and the tree its names
 * are relative to ('api' or '' for the repository): what `make lint` reads, for a test to check.
 */
export function readmeRules(root) {
  const folders = (dir) => fs.readdirSync(path.join(root, dir), { withFileTypes: true }).filter((d) => d.isDirectory());
  const readmes = [
    ['api/README.md', 'api'],
    ...folders('api').map((d) => [`api/${d.name}/README.md`, 'api']),
    ...folders('.')
      .filter((d) => d.name !== 'api')
      .map((d) => [`${d.name}/README.md`, '']),
  ];
  return readmes.flatMap(([readme, tree]) => rulesOf(path.join(root, readme)).map((rule) => ({ readme, tree, ...rule })));
}

/** A path relative to the repository, with `/` and the .ts a .js import names. */
const relative = (root, file) => path.relative(root, file).split(path.sep).join('/').replace(/\.js$/, '.ts');

/** The top folder a file of the repository belongs to for the floors: api/x/ in api/, else its first folder. */
const topFolderOf = (file) =>
  `${file
    .split('/')
    .slice(0, file.startsWith('api/') ? 2 : 1)
    .join('/')}/`;

/**
 * The places of the repository at `root`: `placeOf(file)` (file relative to the root) is its
 * place, { name, readme, tree, targets }, or undefined; `names(place, target)` says which of
 * the place's targets name the file `target`.
 */
export function readPlaces(root) {
  // api/'s own files: those a sentence of api/README.md names (the composition root, the public
  // module), one place per sentence, and the rest, the base (`*.ts`).
  const apiFiles = new Map();
  let base;
  for (const rule of rulesOf(path.join(root, 'api', 'README.md')).filter((r) => r.files)) {
    const place = { readme: 'api/README.md', tree: 'api', targets: rule.targets };
    if (rule.files.includes('*.ts')) base = { ...place, name: 'api/*.ts (the base)' };
    else {
      const group = { ...place, name: rule.files.map((f) => `api/${f}`).join(', ') };
      for (const f of rule.files) apiFiles.set(f, group);
    }
  }
  const folders = new Map();
  // Files a folder's README gives a rule of their own ("`x.ts` may also import: …").
  const ownRules = new Map();
  function folderPlace(folder, tree) {
    if (!folders.has(folder)) {
      const readme = `${folder}/README.md`;
      const rules = rulesOf(path.join(root, readme));
      const rule = rules.find((r) => r.folder);
      folders.set(folder, rule && { name: `${folder}/`, readme, tree, targets: rule.targets });
      for (const r of rules.filter((x) => x.files)) for (const f of r.files) ownRules.set(tree ? `${tree}/${f}` : f, r);
    }
    return folders.get(folder);
  }

  /** The place of `file`, with the rule a README gives the file itself (`own`), or its folder's alone. */
  function placeOf(file, { own: withOwn = true } = {}) {
    const parts = file.split('/');
    let place;
    if (parts[0] === 'api' && parts.length === 2) place = apiFiles.get(parts[1]) ?? base;
    else if (parts[0] === 'api') place = folderPlace(`api/${parts[1]}`, 'api');
    else if (parts.length > 1 && parts[0] !== '..') place = folderPlace(parts[0], '');
    const own = withOwn && place && ownRules.get(file);
    if (!own) return place;
    return { ...place, targets: own.also ? [...place.targets, ...own.targets] : own.targets };
  }

  function names(place, target) {
    const targetPlace = placeOf(target);
    const prefix = place.tree ? `${place.tree}/` : '';
    return place.targets.filter(({ name }) => {
      if (name === '*/') return place.tree === 'api' && target.split('/').length > 2 && targetPlace?.tree === 'api';
      if (name === '*.ts') return place.tree === 'api' && base !== undefined && targetPlace?.name === base.name;
      if (name.endsWith('/')) return target.startsWith(prefix + name);
      return target === prefix + name;
    });
  }

  return { placeOf, names };
}

/**
 * The rule. Options: { exceptions: [[importer, imported], …] }, each a file of the repository
 * (api/http/pages.ts) and a module it may import for now (api/store/users.ts), though its
 * README does not say so; one no import needs any more is reported, to be removed.
 */
export function floorsRule(root) {
  const { placeOf, names } = readPlaces(root);
  return {
    meta: {
      type: 'problem',
      docs: { description: 'a file imports only what the README of its folder says it may (api/README.md)' },
      schema: [
        {
          type: 'object',
          properties: { exceptions: { type: 'array', items: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 } } },
          additionalProperties: false,
        },
      ],
    },
    create(context) {
      const file = relative(root, context.filename);
      const place = placeOf(file);
      // This file's exceptions, each crossed off when an import uses it.
      const unused = new Set((context.options[0]?.exceptions ?? []).filter(([from]) => from === file).map(([, to]) => to));
      const excepted = new Set(unused);

      function check(source, typesOnly) {
        if (!place || typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
        const target = relative(root, path.resolve(path.dirname(context.filename), source.value));
        const targetPlace = placeOf(target);
        if (targetPlace?.name === place.name) return;
        if (excepted.has(target)) return void unused.delete(target);
        const naming = targetPlace ? names(place, target) : [];
        if (naming.some((t) => !t.typesOnly || typesOnly)) return;
        const message = !targetPlace
          ? `${topFolderOf(target)} has no place among the floors: nothing may import it until it is placed (api/README.md says how)`
          : naming.length
            ? `${file} may import only the types of ${target} (import type): ${place.readme} says so`
            : `${file} may not import ${target}: ${place.readme} does not name it (api/README.md says how)`;
        context.report({ node: source, message });
      }

      const typeOnlySpecifiers = (node, kind) => node.specifiers.length > 0 && node.specifiers.every((s) => s[kind] === 'type');
      const atTop = (node, message) => context.report({ node, loc: { line: 1, column: 0 }, message });
      return {
        Program(node) {
          if (place) return;
          const top = topFolderOf(file);
          atTop(
            node,
            file.includes('/')
              ? `${top} has no place among the floors: say what it may import in ${top}README.md ("May import: …"), and name it where it may be imported (api/README.md says how)`
              : `${file}: TypeScript at the root of the repository has no place among the floors; put it in a folder that has one (api/README.md says how)`,
          );
        },
        'Program:exit'(node) {
          for (const target of unused)
            atTop(node, `${file} no longer imports ${target}: remove its exception (TEMPORARY, eslint.config.js)`);
        },
        ImportDeclaration: (node) => check(node.source, node.importKind === 'type' || typeOnlySpecifiers(node, 'importKind')),
        ExportNamedDeclaration: (node) => check(node.source, node.exportKind === 'type' || typeOnlySpecifiers(node, 'exportKind')),
        ExportAllDeclaration: (node) => check(node.source, node.exportKind === 'type'),
        ImportExpression: (node) => check(node.source, false),
        TSImportType: (node) => check(node.argument?.literal ?? node.argument, true),
      };
    },
  };
}

/** The imports of types that may climb a floor in api/ and operator/ (api/README.md names them). */
export const MAX_CLIMBS = 2;

/** The folders whose imports the layers read: the box and the operator (a test reaches what it tests). */
const LAYERED = ['api', 'operator'];

/** Every .ts source under the folders `dirs` of the repository at `root`, relative to it, with `/`. */
function sourcesOf(root, dirs) {
  return dirs.flatMap((dir) =>
    fs.existsSync(path.join(root, dir))
      ? fs
          .readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
          .map((f) => `${dir}/${f.split(path.sep).join('/')}`)
      : [],
  );
}

/**
 * Each source of api/ and operator/ with the sources it imports (values, types, re-exports,
 * dynamic), read from the files on disk: the graph the circles and the count of climbs are read from.
 */
export function importGraph(root) {
  const files = sourcesOf(root, LAYERED);
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(root, file), 'utf8'), true, true);
      const targets = importedFiles
        .map((i) => i.fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => path.posix.join(path.posix.dirname(file), name).replace(/\.js$/, '.ts'))
        .filter((target) => known.has(target));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** The strongly connected components of more than one file (Tarjan): each a circle, or circles sharing files. */
export function circles(graph) {
  const order = new Map();
  const low = new Map();
  const stack = [];
  const found = [];
  const visit = (file) => {
    order.set(file, order.size);
    low.set(file, order.get(file));
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file), low.get(next)));
      } else if (stack.includes(next)) low.set(file, Math.min(low.get(file), order.get(next)));
    }
    if (low.get(file) !== order.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return found.sort();
}

/** The shortest way of imports from `from` to `to` in `graph` (breadth first), both included. */
function wayOf(graph, from, to) {
  const came = new Map([[from, undefined]]);
  for (const queue = [from]; queue.length > 0;) {
    const file = queue.shift();
    if (file === to) break;
    for (const next of graph.get(file) ?? []) {
      if (came.has(next)) continue;
      came.set(next, file);
      queue.push(next);
    }
  }
  const way = [];
  for (let file = to; file !== undefined; file = came.get(file)) way.unshift(file);
  return way;
}

/**
 * The floors of the repository at `root`: `floorOf(file)` is { name, floor, group } of its
 * place (the places on its floor with it), or undefined for a file with no place; `groups` the
 * floors of several places.
 */
export function readFloors(root) {
  const { placeOf, names } = readPlaces(root);
  const tops = fs
    .readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.') && d.name !== 'node_modules' && d.name !== 'dist');
  const files = sourcesOf(
    root,
    tops.map((d) => d.name),
  );
  const places = new Map();
  for (const file of files) {
    const place = placeOf(file, { own: false });
    if (!place) continue;
    if (!places.has(place.name)) places.set(place.name, { place, files: [] });
    places.get(place.name).files.push(file);
  }
  // What each place's own sentence names for its values: the places it stands on.
  const below = new Map(
    [...places].map(([name, { place }]) => [
      name,
      [...places]
        .filter(([other, { files: theirs }]) => other !== name && theirs.some((t) => names(place, t).some((n) => !n.typesOnly)))
        .map(([other]) => other),
    ]),
  );
  // Places whose sentences name each other round (db/, kube/, schema/ and docs/; the composition
  // root and host/) stand on one floor together: a group. A group's floor is one above the
  // highest group it names.
  const groupOf = new Map([...places.keys()].map((name) => [name, [name]]));
  for (const group of circles(below)) for (const name of group) groupOf.set(name, group);
  const floors = new Map();
  const floorOf = (name) => {
    if (!floors.has(name)) {
      const group = groupOf.get(name);
      const under = group.flatMap((member) => below.get(member)).filter((other) => !group.includes(other));
      const floor = Math.max(-1, ...under.map(floorOf)) + 1;
      for (const member of group) floors.set(member, floor);
    }
    return floors.get(name);
  };
  for (const name of places.keys()) floorOf(name);
  return {
    floorOf(file) {
      const place = placeOf(file, { own: false });
      return place && { name: place.name, floor: floors.get(place.name), group: groupOf.get(place.name) };
    },
    groups: [...new Set(groupOf.values())].filter((group) => group.length > 1),
  };
}

/**
 * The rule `floors/layers`: no import climbs to a place on its floor or a higher one but an
 * `import type`, MAX_CLIMBS of those at most in api/ and operator/, and no import circle there.
 */
export function layersRule(root) {
  let repository;
  // Read once a lint, when the first file asks: the floors, the graph on disk, its circles and climbs.
  const read = () => {
    if (repository) return repository;
    const { floorOf } = readFloors(root);
    const graph = importGraph(root);
    const circleOf = new Map(circles(graph).flatMap((files) => files.map((file) => [file, new Set(files)])));
    const climbs = (from, to) => {
      const [a, b] = [floorOf(from), floorOf(to)];
      return a !== undefined && b !== undefined && !a.group.includes(b.name) && b.floor >= a.floor;
    };
    const allClimbs = [...graph].flatMap(([from, targets]) => targets.filter((to) => climbs(from, to)).map((to) => `${from} → ${to}`));
    return (repository = { floorOf, graph, circleOf, climbs, allClimbs });
  };
  return {
    meta: {
      type: 'problem',
      docs: { description: 'no import climbs a floor but types, a few at most, and no import circle (api/README.md)' },
      schema: [],
    },
    create(context) {
      const file = relative(root, context.filename);
      const layered = LAYERED.some((dir) => file.startsWith(`${dir}/`));
      const { floorOf, graph, circleOf, climbs, allClimbs } = read();

      function check(source, typesOnly) {
        if (!layered || typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
        const target = relative(root, path.resolve(path.dirname(context.filename), source.value));
        const report = (message) => context.report({ node: source, message });
        if (climbs(file, target)) {
          const [a, b] = [floorOf(file), floorOf(target)];
          const where = `${a.name} stands on floor ${a.floor}, ${b.name} on floor ${b.floor}`;
          if (!typesOnly)
            report(
              `${file} imports ${target}, which stands no lower than it (${where}): move what it takes down, or hand it in from above; only \`import type\` may climb (api/README.md)`,
            );
          else if (allClimbs.length > MAX_CLIMBS)
            report(
              `${file} imports the types of ${target}, which stands no lower than it (${where}): ${allClimbs.length} imports climb where ${MAX_CLIMBS} may (${allClimbs.join(', ')}; api/README.md)`,
            );
        }
        if (circleOf.get(file)?.has(target)) {
          const back = wayOf(graph, target, file);
          report(`${file} imports ${target}, which imports it back (${back.join(' → ')}): an import circle; break it (api/README.md)`);
        }
      }

      const typeOnlySpecifiers = (node, kind) => node.specifiers.length > 0 && node.specifiers.every((s) => s[kind] === 'type');
      return {
        ImportDeclaration: (node) => check(node.source, node.importKind === 'type' || typeOnlySpecifiers(node, 'importKind')),
        ExportNamedDeclaration: (node) => check(node.source, node.exportKind === 'type' || typeOnlySpecifiers(node, 'exportKind')),
        ExportAllDeclaration: (node) => check(node.source, node.exportKind === 'type'),
        ImportExpression: (node) => check(node.source, false),
        TSImportType: (node) => check(node.argument?.literal ?? node.argument, true),
      };
    },
  };
}
