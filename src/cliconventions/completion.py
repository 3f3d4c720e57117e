"""Shell completion scripts generated from an argparse tree: subcommands, then each
command's options; anything else completes as a file name."""

from __future__ import annotations

import argparse
import re

# command name ("" for the top level) -> (words to offer, one-line help per word)
Tree = dict[str, list[tuple[str, str]]]


def tree_of(parser: argparse.ArgumentParser) -> Tree:
    from cliconventions import subcommands

    commands = subcommands(parser)
    helps = _subcommand_helps(parser)
    tree: Tree = {"": [(name, helps.get(name, "")) for name in commands] + _options(parser)}
    for name, sub in commands.items():
        tree[name] = _options(sub)
    return tree


def _subcommand_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for action in parser._actions:
        help_ = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
        found += [(option, help_) for option in action.option_strings if option.startswith("--")]
    return found


def script(shell: str, program: str, tree: Tree) -> str:
    if shell == "bash":
        return _bash(program, tree)
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + _bash(program, tree)
    return _fish(program, tree)


def _function_name(program: str) -> str:
    return "_" + re.sub(r"\W", "_", program) + "_completion"


def _bash(program: str, tree: Tree) -> str:
    function = _function_name(program)
    empty = '""'
    cases = "\n".join(
        f'        {name or empty}) words="{" ".join(w for w, _ in words)}" ;;'
        for name, words in tree.items()
    )
    return f"""# {program} completion for bash (and zsh through bashcompinit)
{function}() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} command="" words="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in -*) ;; *) command=${{COMP_WORDS[i]}}; break ;; esac
    done
    case $command in
{cases}
    esac
    if [[ -z $command || $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
}}
complete -o default -F {function} {program}
"""


def _fish(program: str, tree: Tree) -> str:
    lines = [f"# {program} completion for fish", f"complete -c {program} -f"]
    commands = [name for name in tree if name]
    for word, help_ in tree[""]:
        condition = "__fish_use_subcommand"
        lines.append(_fish_line(program, condition, word, help_))
    for name in commands:
        condition = f"__fish_seen_subcommand_from {name}"
        lines.append(f"complete -c {program} -n '{condition}' -F")
        lines += [_fish_line(program, condition, word, help_) for word, help_ in tree[name]]
    return "\n".join(lines) + "\n"


def _fish_line(program: str, condition: str, word: str, help_: str) -> str:
    what = f"-l {word[2:]}" if word.startswith("--") else f"-a {word}"
    description = help_.replace("'", "\\'")
    return f"complete -c {program} -n '{condition}' {what} -d '{description}'"
