// boxauth completion bash|zsh: a script for the shell that completes commands, their
// subcommands, options and the values of options that have a few (-o table|json|yaml), all
// made from the commands' specs, so the completion cannot drift from what the commands take.
// zsh runs the same functions through its bashcompinit.
import type { CommandSpec } from './command.js';

/** A shell word, single-quoted. */
const quoted = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/** The spellings of an option: `--name` and, when it has one, `-x`. */
function spellings(name: string, short: string | undefined): string[] {
  return short ? [`--${name}`, `-${short}`] : [`--${name}`];
}

function caseArms(arms: [string[], string[]][]): string {
  return arms.map(([patterns, words]) => `    ${patterns.map(quoted).join('|')}) echo ${quoted(words.join(' '))} ;;`).join('\n');
}

/** The bash functions: what each command, subcommand and option completes to. */
export function bashCompletion(specs: CommandSpec[]): string {
  const commandWords = [...specs.flatMap((s) => [s.name, ...(s.aliases ?? [])]), 'help', '--help', '--version'];
  const canonical = caseArms(specs.filter((s) => s.aliases?.length).map((s) => [[...s.aliases!], [s.name]]));
  const verbs = caseArms(
    specs.map((s) => [
      [s.name],
      s.verbs ? Object.entries(s.verbs).flatMap(([verb, v]) => [verb, ...(v.aliases ?? [])]) : [...(s.completes ?? [])],
    ]),
  );
  const optionsOf = (s: CommandSpec, names: readonly string[]): string[] => [
    ...names.flatMap((name) => spellings(name, s.options[name]?.short)),
    '--help',
  ];
  const options = caseArms(
    specs.flatMap((s): [string[], string[]][] => [
      ...Object.entries(s.verbs ?? {}).map(([verb, v]): [string[], string[]] => [
        [verb, ...(v.aliases ?? [])].map((name) => `${s.name} ${name}`),
        optionsOf(s, v.options ?? []),
      ]),
      [[`${s.name} `], optionsOf(s, Object.keys(s.options))],
    ]),
  );
  const valued = caseArms(
    specs.map((s) => [
      [s.name],
      Object.entries(s.options)
        .filter(([, o]) => o.type === 'string')
        .flatMap(([name, o]) => spellings(name, o.short)),
    ]),
  );
  const values = caseArms(
    specs.flatMap((s) =>
      Object.entries(s.options)
        .filter(([, o]) => o.values)
        .map(([name, o]): [string[], string[]] => [spellings(name, o.short).map((spelling) => `${s.name} ${spelling}`), [...o.values!]]),
    ),
  );
  return `# boxauth completion for bash: source <(boxauth completion bash), or save it to
# /etc/bash_completion.d/boxauth (or ~/.local/share/bash-completion/completions/boxauth).
_boxauth_canonical() {
  case "$1" in
${canonical}
    *) echo "$1" ;;
  esac
}
_boxauth_verbs() {
  case "$1" in
${verbs}
  esac
}
_boxauth_options() {
  case "$1 $2" in
${options}
  esac
}
_boxauth_valued() {
  case "$1" in
${valued}
  esac
}
_boxauth_values() {
  case "$1 $2" in
${values}
  esac
}
_boxauth() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="" verb="" skip="" i w
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [[ -n $skip ]]; then skip=""; continue; fi
    if [[ $w == -* ]]; then
      [[ -n $cmd && $w != *=* && " $(_boxauth_valued "$cmd") " == *" $w "* ]] && skip=1
      continue
    fi
    if [[ -z $cmd ]]; then cmd="$(_boxauth_canonical "$w")"
    elif [[ -z $verb ]]; then verb="$w"
    fi
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W ${quoted(commandWords.join(' '))} -- "$cur"))
    return 0
  fi
  if [[ $prev == -* && " $(_boxauth_valued "$cmd") " == *" $prev "* ]]; then
    # A value: the option's few, else the shell's default (file names).
    COMPREPLY=($(compgen -W "$(_boxauth_values "$cmd" "$prev")" -- "$cur"))
    return 0
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_boxauth_options "$cmd" "$verb")" -- "$cur"))
  elif [[ -z $verb ]]; then
    COMPREPLY=($(compgen -W "$(_boxauth_verbs "$cmd")" -- "$cur"))
  fi
  return 0
}
complete -o default -F _boxauth boxauth
`;
}

/** The same functions for zsh, through its bash completion layer. */
export function zshCompletion(specs: CommandSpec[]): string {
  return `#compdef boxauth
# boxauth completion for zsh: source <(boxauth completion zsh), or save it as _boxauth in a
# directory of your $fpath. It runs the bash completion through zsh's bashcompinit.
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(specs)}`;
}
