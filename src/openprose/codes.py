"""Every diagnostic code, its severity and its meaning — the one table the docs are built from.

E001-E028 and W001-W011 are the reference's codes. Rows of the reference's per-section
validation tables that carry no code get codes of ours:
  E100-E139 / W100-W139  scanner and parser
  E140-E199 / W140-W199  checker
  I001-I099              notes: checks deferred to run time
"""

from __future__ import annotations

from dataclasses import dataclass

from openprose.diagnostics import Diagnostic, Fix, Severity
from openprose.source import Span


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    severity: Severity
    meaning: str


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_TABLE: tuple[Code, ...] = (
    # --- reference: errors -------------------------------------------------------------------
    Code("E001", E, "Unterminated string literal"),
    Code("E002", E, "Unknown escape sequence in string"),
    Code("E003", E, "Session missing prompt or agent"),
    Code("E004", E, "Unexpected token"),
    Code("E005", E, "Invalid syntax"),
    Code("E006", E, "Duplicate agent definition"),
    Code("E007", E, "Undefined agent reference"),
    Code("E008", E, "Invalid model value"),
    Code("E009", E, "Duplicate property"),
    Code("E010", E, "Duplicate use statement"),
    Code("E011", E, "Empty use path"),
    Code("E012", E, "Invalid use path format"),
    Code("E013", E, "Skills must be an array"),
    Code("E014", E, "Skill name must be a string"),
    Code("E015", E, "Permissions must be a block"),
    Code("E016", E, "Permission pattern must be a string"),
    Code("E017", E, "`resume:` requires persistent agent"),
    Code("E018", E, "`resume:` with no existing memory"),
    Code("E019", E, "Duplicate variable name (flat namespace)"),
    Code("E020", E, "Empty input name"),
    Code("E021", E, "Duplicate input declaration"),
    Code("E022", E, "Input after executable statement"),
    Code("E023", E, "Empty output name"),
    Code("E024", E, "Duplicate output declaration"),
    Code("E025", E, "Unknown program in invocation"),
    Code("E026", E, "Missing required input"),
    Code("E027", E, "Unknown input name in invocation"),
    Code("E028", E, "Unknown output property access"),
    # --- reference: warnings -----------------------------------------------------------------
    Code("W001", W, "Empty session prompt"),
    Code("W002", W, "Whitespace-only session prompt"),
    Code("W003", W, "Session prompt exceeds 10,000 characters"),
    Code("W004", W, "Empty prompt property"),
    Code("W005", W, "Unknown property name"),
    Code("W006", W, "Unknown import source format"),
    Code("W007", W, "Skill not imported"),
    Code("W008", W, "Unknown permission type"),
    Code("W009", W, "Unknown permission value"),
    Code("W010", W, "Empty skills array"),
    Code("W011", W, "`session:` on persistent agent with existing memory"),
    # --- ours: scanner and parser (E100-E139, W100-W139) ---------------------------------------
    Code("E100", E, "Source is not valid UTF-8"),
    Code("E101", E, "Tab character (OpenProse indents with spaces)"),
    Code("E102", E, "Unexpected character"),
    Code("E103", E, "Unindent does not match any outer indentation level"),
    Code("E104", E, "Unexpected indent"),
    Code("E105", E, "Expected an indented block"),
    Code("E106", E, 'Opening """ must be followed by a newline'),
    Code("E107", E, "Unterminated discretion `**`"),
    Code("E108", E, "Unterminated multi-line discretion `***`"),
    Code("E109", E, "Unclosed bracket"),
    Code("E110", E, "Elif without if"),
    Code("E111", E, "Else without if"),
    Code("E112", E, "Multiple else (or elif after else)"),
    Code("E113", E, "catch/finally without try"),
    Code("E114", E, "option outside a choice block"),
    Code("E115", E, "Nesting too deep (more than 1000 levels)"),
    Code("E116", E, "A bare value is not a statement"),
    Code("E117", E, "Too many diagnostics; reporting stopped"),
    Code("E118", E, "Cannot read source file"),
    Code("E119", E, "Misplaced catch/finally clause (duplicate, or catch after finally)"),
    Code("E120", E, "Invalid pipe operator (expected map, filter, reduce, pmap)"),
    Code("E121", E, "Reduce without accumulator and item variables"),
    Code("E122", E, "Number literal too long (more than 1000 characters)"),
    Code("E123", E, 'Legacy `import "x" from "y"` statement (the reference imports with `use`)'),
    Code("W100", W, "Block has an empty body (the line after its header is not indented)"),
    # --- ours: checker (E140-E199, W140-W199, I001-I099) ---------------------------------------
    Code("E140", E, "Undefined variable"),
    Code("E141", E, "Undefined variable in string interpolation"),
    Code("E142", E, "Undefined variable in context"),
    Code("E143", E, "Context elements must be variable references"),
    Code("E144", E, "Cannot reassign a const (const, loop, parameter or error variable)"),
    Code("E145", E, "Variable name conflicts with agent name"),
    Code("E146", E, "Output name conflicts with variable"),
    Code("E147", E, "Alias required when importing programs with the same name"),
    Code("E148", E, "Undefined block reference"),
    Code("E149", E, "Duplicate block definition"),
    Code("E150", E, "Block name conflicts with agent name"),
    Code("E151", E, "Empty block name"),
    Code("E152", E, 'Invalid join strategy (must be "all", "first" or "any")'),
    Code("E153", E, 'Invalid on-fail policy (must be "fail-fast", "continue" or "ignore")'),
    Code("E154", E, 'Count is only valid with the "any" strategy'),
    Code("E155", E, "Count must be at least 1"),
    Code("E156", E, "Repeat count must be positive"),
    Code("E157", E, "Repeat count must be an integer"),
    Code("E158", E, "Undefined collection variable"),
    Code("E159", E, "Max iterations must be positive"),
    Code("E160", E, "Max iterations must be an integer"),
    Code("E161", E, "Empty discretion condition (loop, if/elif, choice criteria)"),
    Code("E162", E, "Try block without catch or finally"),
    Code("E163", E, "Retry count must be positive"),
    Code("E164", E, "Retry count must be an integer"),
    Code("E165", E, "Invalid backoff strategy (must be none, linear or exponential)"),
    Code("E166", E, "Choice block without options"),
    Code("E167", E, "Invalid persist value (must be true, project, user or a path string)"),
    Code("E168", E, "Unknown or duplicate modifier in parallel/loop parentheses"),
    Code("E169", E, "Duplicate argument in program invocation"),
    Code("E170", E, "Imported program file not found"),
    Code("E171", E, "Imported program does not check (its first error, or an import cycle)"),
    Code("E180", E, "Invalid shape (unknown type, repeated field, missing or broken schema)"),
    Code("E181", E, "Unknown field of a typed value"),
    Code("E190", E, "Ask options must be a non-empty list of strings"),
    Code("E191", E, "Ask default is not one of its options"),
    Code("E192", E, 'Invalid ask timeout (seconds, or a duration such as "10m")'),
    Code("W140", W, "Input has an empty description"),
    Code("W141", W, "Block argument count does not match its parameters"),
    Code("W142", W, "Block parameter shadows outer variable"),
    Code("W143", W, "Count exceeds number of parallel branches"),
    Code("W144", W, "Loop variable shadows outer variable"),
    Code("W145", W, "Unbounded loop without max iterations"),
    Code("W146", W, "Very short discretion condition may be ambiguous"),
    Code("W147", W, "Pipeline variable shadows outer variable"),
    Code("W148", W, "Error variable shadows outer variable"),
    Code("W149", W, "Throw message is empty"),
    Code("W150", W, "Retry count is unusually high (more than 10)"),
    Code("W151", W, "Retry on agent definition (only valid in session statements)"),
    Code("W152", W, "Duplicate option label"),
    Code("W153", W, "Option has empty body"),
    Code("W154", W, "Condition branch has empty body"),
    Code("W155", W, "Too many warnings; reporting stopped (no error was left out)"),
    Code("W156", W, "Variable may be unbound: bound only in a body that may not run"),
    Code("W170", W, "Quoted enum value (write it bare: `backoff: exponential`)"),
    Code("W171", W, "Another language's template braces (`{{name}}`, `${name}`) around `{name}`"),
    Code("W180", W, "Remote program's agent asks for a permission its cap does not give"),
    Code("W181", W, "`mcp:` grant names a server or tool prose.toml does not declare"),
    Code("W190", W, "Unknown ask property (known: options, default, timeout)"),
    Code("W191", W, "Empty ask question"),
    Code("W192", W, "Duplicate ask option"),
    Code("I001", I, "Agent memory check (E018/W011) deferred to run time"),
    Code("I002", I, "Imported program contract checks (E026-E028) deferred to run time"),
)

CODES: dict[str, Code] = {c.code: c for c in _TABLE}


def severity_of(code: str) -> Severity:
    return CODES[code].severity


@dataclass(frozen=True, slots=True)
class Guidance:
    """Where a code comes from in the language reference, and how to resolve it."""

    rule: str
    help: str


_GRAMMAR = "Syntax Grammar (Implemented)"
_FLAT = (
    'Variables & Context, Flat Namespace Requirement: "All variable names must be unique '
    'within a program"'
)
_ASK = "ours (docs/guide.md, ask)"
_MODELS = 'Agent Definitions: "model:" ( "sonnet" | "opus" | "haiku" )'

# Rule and default help line per code; a diagnostic may carry a sharper help of its own.
GUIDANCE: dict[str, Guidance] = {
    "E001": Guidance(
        "String Literals, Rules 1: strings must be terminated",
        'close the string with `"` on the same line, or use `"""` for text spanning lines',
    ),
    "E002": Guidance(
        'String Literals, Escape Sequences: \\\\ \\" \\n \\t (and \\{ for a literal brace)',
        'double the backslash (`\\\\`) to keep it, or use one of \\\\ \\" \\n \\t \\{',
    ),
    "E003": Guidance(
        f'{_GRAMMAR}: session → "session" ( string | ":" IDENTIFIER | IDENTIFIER ":" IDENTIFIER )',
        'give the session a prompt on its line (`session "..."`) or an agent (`session: name`)',
    ),
    "E004": Guidance(
        f"{_GRAMMAR}: the statement does not match any production",
        "rewrite the statement in one of the grammar's forms (see docs/language.md)",
    ),
    "E005": Guidance(
        f"{_GRAMMAR}: the statement ends before its production is complete",
        "complete the statement as the grammar shows",
    ),
    "E006": Guidance(
        "Agent Definitions, Validation Rules: Duplicate agent name",
        "rename one of the agents, or merge their properties into one definition",
    ),
    "E007": Guidance(
        "Session Statement, Validation Rules: Undefined agent reference",
        "define the agent (`agent name:` with its properties) or fix the name",
    ),
    "E008": Guidance(
        _MODELS,
        "keep the alias in the program and map it to any model when running: "
        '`prose run --model sonnet=openai:gpt-4.1`, or `sonnet = "gpt-4.1"` under '
        "[providers.openai.models] in prose.toml",
    ),
    "E009": Guidance(
        "Agent Definitions / Session Statement, Validation Rules: Duplicate property",
        "keep one of the two properties",
    ),
    "E010": Guidance(
        "Use Statements, Validation Rules: Duplicate import",
        "remove the second `use` of the same program",
    ),
    "E011": Guidance("Use Statements, Validation Rules: Empty path", 'write `use "@handle/slug"`'),
    "E012": Guidance(
        'Use Statements, Path Format: "Import paths follow the format @handle/slug"',
        'write the path as `"@handle/slug"` (or a local `"file.prose"`)',
    ),
    "E013": Guidance(
        f'{_GRAMMAR}: "skills:" "[" string* "]"', 'write the skills as an array: skills: ["name"]'
    ),
    "E014": Guidance(f'{_GRAMMAR}: "skills:" "[" string* "]"', 'quote the skill name: "name"'),
    "E015": Guidance(
        f'{_GRAMMAR}: "permissions:" NEWLINE INDENT permission* DEDENT',
        "put the permission rules on indented lines under `permissions:`",
    ),
    "E016": Guidance(
        "Agent Definitions, Permission Values: an array of patterns (strings)",
        'quote the pattern: ["*.md"]',
    ),
    "E017": Guidance(
        "Resume Statement, Validation Rules: `resume:` on non-persistent agent",
        "add `persist: true` (or project) to the agent, or use `session:`",
    ),
    "E018": Guidance(
        "Resume Statement, Validation Rules: `resume:` with no existing memory",
        "use `session:` for the agent's first invocation; `resume:` afterwards",
    ),
    "E019": Guidance(_FLAT, "rename one of the variables, or declare it once and assign it"),
    "E020": Guidance(
        "Input Declarations, Validation Rules: Empty input name",
        'write `input name: "description"`',
    ),
    "E021": Guidance(
        "Input Declarations, Validation Rules: Duplicate input name",
        "remove or rename the second input",
    ),
    "E022": Guidance(
        "Input Declarations, Semantics: inputs are declared at the top of the program",
        "move the `input` line above the first executable statement",
    ),
    "E023": Guidance(
        "Output Bindings, Validation Rules: Empty output name", "write `output name = expression`"
    ),
    "E024": Guidance(
        "Output Bindings, Validation Rules: Duplicate output name", "rename one of the outputs"
    ),
    "E025": Guidance(
        "Program Invocation, Validation Rules: Unknown program",
        'import the program first: use "@handle/slug" as name',
    ),
    "E026": Guidance(
        "Program Invocation, Validation Rules: Missing required input",
        "pass every input the program declares: name(input: value)",
    ),
    "E027": Guidance(
        "Program Invocation, Validation Rules: Unknown input name",
        "pass only the inputs the program declares",
    ),
    "E028": Guidance(
        "Program Invocation, Validation Rules: Unknown output property",
        "use one of the outputs the program declares",
    ),
    "E100": Guidance("File Format: Encoding UTF-8", "save the file as UTF-8"),
    "E101": Guidance(
        "File Format: Indentation with spaces (Python-like)", "indent with spaces, not tabs"
    ),
    "E102": Guidance(
        "Syntax Grammar: only the grammar's tokens (names, strings, numbers, punctuation); "
        "File Format: line endings LF or CRLF",
        "remove the character (inside a string it is fine)",
    ),
    "E103": Guidance(
        "File Format: Indentation (Python-like)", "indent the line exactly as an enclosing block"
    ),
    "E104": Guidance(
        "File Format: Indentation (Python-like); a block is indented only under a header ending in ':'",
        "unindent the line to the level of the statement before it",
    ),
    "E105": Guidance(
        f"{_GRAMMAR}: the block needs statement+ (an indented body)",
        "indent at least one statement under the header",
    ),
    "E106": Guidance(
        'String Literals, Multi-line String Rules 1: "Opening """ must be followed by a newline"',
        'start the text on the line after the opening """',
    ),
    "E107": Guidance(
        f'{_GRAMMAR}: discretion → "**" text "**"', "close the condition with ** on the same line"
    ),
    "E108": Guidance(
        f'{_GRAMMAR}: discretion → "***" text "***"', "close the multi-line condition with ***"
    ),
    "E109": Guidance(f"{_GRAMMAR}: brackets pair up", "add the missing closing bracket"),
    "E110": Guidance(
        "Conditional Statements, Validation Rules: Elif without if",
        "start the chain with `if **condition**:`",
    ),
    "E111": Guidance(
        "Conditional Statements, Validation Rules: Else without if",
        "put `else:` right after an if or elif body",
    ),
    "E112": Guidance(
        "Conditional Statements, Validation Rules: Multiple else",
        "keep one `else:`, as the last clause",
    ),
    "E113": Guidance(
        f'{_GRAMMAR}: tryBlock → "try" ":" ... catchBlock? finallyBlock?',
        "put `catch:`/`finally:` right after a `try:` body, at the same indentation",
    ),
    "E114": Guidance(
        f"{_GRAMMAR}: choiceOption appears only inside a choice block",
        "indent the option under `choice **criteria**:`",
    ),
    "E115": Guidance("ours: nesting limit (docs/decisions.md)", "split the program into blocks"),
    "E116": Guidance(
        f"{_GRAMMAR}: a statement is a session, binding, block, ...; a value is not",
        "bind the value (`let x = ...`) or pass it as context",
    ),
    "E117": Guidance("ours: reporting limit", "fix the errors shown and check again"),
    "E118": Guidance("File Format", "check the path and its permissions"),
    "E119": Guidance(
        f"{_GRAMMAR}: tryBlock → ... catchBlock? finallyBlock?", "keep one catch, then one finally"
    ),
    "E120": Guidance(
        "Pipeline Operations, Validation Rules: Invalid pipe operator",
        "use map, filter, reduce or pmap",
    ),
    "E121": Guidance(
        "Pipeline Operations, Validation Rules: Reduce without variables",
        "write reduce(acc, item):",
    ),
    "E122": Guidance("ours: number length limit", "use a shorter number"),
    "E123": Guidance(
        'Use Statements: "use "@handle/slug" as alias" imports programs and skills',
        'rewrite as `use "SOURCE" as NAME`',
    ),
    "E140": Guidance(
        "Variables & Context, Validation Rules: Undefined variable reference",
        "declare the variable (let/const) before using it, or fix the name",
    ),
    "E141": Guidance(
        'String Interpolation, Rules 2 and 4: "Referenced variables must be in scope"; '
        '"\\{ produces literal {"',
        "declare the variable before the string, or write \\{ for a literal brace",
    ),
    "E142": Guidance(
        "Variables & Context, Validation Rules: Undefined context variable",
        "declare the variable before the session, or remove it from context",
    ),
    "E143": Guidance(
        "Variables & Context, Validation Rules: Non-identifier in context array",
        "bind the value to a variable first and pass the variable",
    ),
    "E144": Guidance(
        "Variables & Context, Validation Rules: Const reassignment",
        "declare it with `let` to reassign it, or bind a new name",
    ),
    "E145": Guidance(
        "Variables & Context, Validation Rules: Variable conflicts with agent",
        "rename the variable",
    ),
    "E146": Guidance(
        "Output Bindings, Validation Rules: Output name conflicts",
        "rename the output or the variable",
    ),
    "E147": Guidance(
        "Use Statements, Validation Rules: Missing alias for dup",
        "add `as NAME` to one of the imports",
    ),
    "E148": Guidance(
        "Composition Blocks, Validation Rules: Undefined block reference",
        "define the block (`block name:`) or fix the name",
    ),
    "E149": Guidance(
        "Composition Blocks, Validation Rules: Duplicate block definition",
        "rename one of the blocks",
    ),
    "E150": Guidance(
        "Composition Blocks, Validation Rules: Block name conflicts with agent", "rename the block"
    ),
    "E151": Guidance(
        "Composition Blocks, Validation Rules: Empty block name", "write `block name:`"
    ),
    "E152": Guidance(
        "Parallel Blocks, Validation Rules: Invalid join strategy",
        'write "all", "first" or "any" (quoted)',
    ),
    "E153": Guidance(
        "Parallel Blocks, Validation Rules: Invalid on-fail policy",
        'write on-fail: "fail-fast", "continue" or "ignore" (quoted)',
    ),
    "E154": Guidance(
        'Parallel Blocks, Validation Rules: Count without "any"',
        'add the "any" strategy: parallel ("any", count: N):',
    ),
    "E155": Guidance(
        "Parallel Blocks, Validation Rules: Count less than 1", "use a whole number of at least 1"
    ),
    "E156": Guidance(
        "Fixed Loops, Validation Rules: Repeat count must be positive", "use a count of at least 1"
    ),
    "E157": Guidance(
        "Fixed Loops, Validation Rules: Repeat count must be integer",
        "use a whole number: repeat 3:",
    ),
    "E158": Guidance(
        "Fixed Loops, Validation Rules: Undefined collection variable",
        "declare the collection before the loop",
    ),
    "E159": Guidance(
        "Unbounded Loops, Validation Rules: Max iterations <= 0", "use (max: N) with N at least 1"
    ),
    "E160": Guidance(
        "Unbounded Loops, Validation Rules: Max iterations not integer",
        "use a whole number: (max: 10)",
    ),
    "E161": Guidance(
        "Unbounded Loops / Choice / Conditionals: Empty discretion condition",
        "write the condition between ** **",
    ),
    "E162": Guidance(
        "Error Handling, Validation Rules: Try without catch or finally",
        "add a `catch:` or `finally:` clause",
    ),
    "E163": Guidance(
        "Error Handling, Validation Rules: Non-positive retry count",
        "use retry: N with N at least 1",
    ),
    "E164": Guidance(
        "Error Handling, Validation Rules: Non-integer retry count", "use a whole number: retry: 3"
    ),
    "E165": Guidance(
        'Error Handling: backoff_property ::= "backoff" ":" ( "none" | "linear" | "exponential" )',
        "write none, linear or exponential",
    ),
    "E166": Guidance(
        "Choice Blocks, Validation Rules: Choice without options", 'add `option "label":` lines'
    ),
    "E167": Guidance(
        f'{_GRAMMAR}: "persist:" ( "true" | "project" | string )',
        "write true, project or a path string",
    ),
    "E168": Guidance(
        f"{_GRAMMAR}: parallelMods / loopMods",
        "keep each modifier once; parallel takes a strategy, on-fail: and count:; loop takes max:",
    ),
    "E169": Guidance(
        "Program Invocation: name(input1: value1, input2: value2)", "pass each input once"
    ),
    "E170": Guidance(
        "Use Statements: the imported program must exist", "fix the path or create the file"
    ),
    "E171": Guidance(
        "Use Statements / Program Invocation: an imported program is parsed and validated "
        "like the importing one",
        "fix the imported program (`prose check` it), or break the cycle of imports",
    ),
    "E180": Guidance(
        "Typed results (docs/language.md): a shape is string, number, integer, boolean, "
        '`list of` a shape, "a" | "b", fields, or `schema` with a JSON Schema',
        "use one of the types, name each field once, or fix the schema (file) it names",
    ),
    "E181": Guidance(
        "Typed results (docs/language.md): a typed value has the fields its shape declares",
        "use a field the shape declares, or add the field to the shape",
    ),
    "E190": Guidance(
        _ASK + ': "options:" is an array of strings, the answers a person may choose from',
        'list the answers as strings: options: ["yes", "no"]',
    ),
    "E191": Guidance(
        _ASK + ": a default of a question with options is one of them",
        "make the default one of the options, or add it to them",
    ),
    "E192": Guidance(
        _ASK + ': "timeout:" is a number of seconds or a string with a unit (s, m, h, d)',
        'write timeout: 600 or timeout: "10m"',
    ),
    "W001": Guidance(
        "Session Statement, Validation Rules: Empty prompt", "write the task between the quotes"
    ),
    "W002": Guidance(
        "Session Statement, Validation Rules: Whitespace-only prompt",
        "write the task between the quotes",
    ),
    "W003": Guidance(
        "Session Statement, Validation Rules: Prompt > 10,000 chars",
        "split the task into smaller sessions",
    ),
    "W004": Guidance(
        "Agent Definitions, Validation Rules: Empty prompt property",
        "write a prompt or remove the property",
    ),
    "W005": Guidance(f"{_GRAMMAR}: agentProperty / sessionProperty", "use a known property name"),
    "W006": Guidance(
        'Use Statements, Path Format: "@handle/slug"', 'write the path as "@handle/slug"'
    ),
    "W007": Guidance(
        'Agent Definitions, Skills Property: "Skills must be imported"',
        'import the skill: use "@handle/skill"',
    ),
    "W008": Guidance(
        "Agent Definitions, Permission Types", "use read, write, execute, bash or network"
    ),
    "W009": Guidance(
        "Agent Definitions, Permission Values", "use allow, deny, prompt or an array of patterns"
    ),
    "W010": Guidance(
        "Validation Rules: Empty skills array", "list the skills or remove the property"
    ),
    "W011": Guidance(
        "Resume Statement, Validation Rules: session: on persistent agent with memory",
        "use `resume:` to continue with the agent's memory",
    ),
    "W100": Guidance(
        "Grammar: statement* bodies may be empty, but an empty body is rarely meant",
        "indent the body's statements under the header",
    ),
    "W140": Guidance(
        "Input Declarations, Validation Rules: Empty description", "describe the input"
    ),
    "W141": Guidance(
        "Block Parameters, Validation Rules: Argument count mismatch",
        "pass one argument per parameter",
    ),
    "W142": Guidance(
        "Block Parameters, Validation Rules: Parameter shadows outer", "rename the parameter"
    ),
    "W143": Guidance(
        "Parallel Blocks, Validation Rules: Count exceeds branches",
        "lower the count or add branches",
    ),
    "W144": Guidance(
        "Fixed Loops, Validation Rules: Loop variable shadows outer", "rename the loop variable"
    ),
    "W145": Guidance("Unbounded Loops: Always include a safety limit", "add (max: N)"),
    "W146": Guidance(
        "Unbounded Loops, Validation Rules: Very short condition",
        "say the condition in a full phrase",
    ),
    "W147": Guidance(
        "Pipeline Operations, Validation Rules: Pipeline variable shadows outer",
        "rename the outer variable",
    ),
    "W148": Guidance(
        "Error Handling, Validation Rules: Error variable shadows outer",
        "rename the error variable",
    ),
    "W149": Guidance(
        "Error Handling, Validation Rules: Empty throw message",
        "say what went wrong, or write a bare `throw`",
    ),
    "W150": Guidance(
        "Error Handling, Validation Rules: High retry count (>10)", "lower the retry count"
    ),
    "W151": Guidance(
        "Error Handling, Validation Rules: Retry on agent definition",
        "move `retry:` to the sessions",
    ),
    "W152": Guidance(
        "Choice Blocks, Validation Rules: Duplicate option labels", "give each option its own label"
    ),
    "W153": Guidance(
        "Choice Blocks, Validation Rules: Empty option body", "indent statements under the option"
    ),
    "W154": Guidance(
        "Conditional Statements, Validation Rules: Empty body", "indent statements under the clause"
    ),
    "W156": Guidance(
        "Variables & Context: a variable is used where the body that binds it may not have run",
        'declare it before the body with let NAME = "" and assign it in the body',
    ),
    "W180": Guidance(
        "ours (docs/tools.md, Imported programs): a program from a URL or the registry gets "
        "no bash, network, write, MCP tools or reads outside the project unless the user "
        "grants them",
        'grant it in prose.toml: [imports.grants."SPEC"] with the permission, or use the '
        "program without it",
    ),
    "W181": Guidance(
        "ours (docs/tools.md, MCP servers): an agent is granted the tools of servers the "
        "project declares as [mcp.servers.NAME] in prose.toml",
        'declare the server in prose.toml, or grant one it declares (`mcp: ["notes"]`)',
    ),
    "W171": Guidance(
        "String Interpolation: variables are referenced by wrapping the name in curly braces, "
        "`{varname}`",
        "write `{name}`: the extra characters stay in the text the model reads",
    ),
    "W190": Guidance(
        _ASK + ": an ask takes options, default and timeout", "rename or remove the property"
    ),
    "W191": Guidance(_ASK + ": the question is what the person reads", "write the question"),
    "W192": Guidance(_ASK + ": each option is an answer of its own", "remove the repeated option"),
    "W170": Guidance(
        f'{_GRAMMAR}: "backoff:" ( "none" | "linear" | "exponential" ), "model:" ( "sonnet" | ... )'
        " are identifiers",
        "remove the quotes",
    ),
    "W155": Guidance("ours: reporting limit", "fix the warnings shown and check again"),
    "I001": Guidance(
        "Resume Statement: memory is checked where it lives",
        "check it in its project: where `prose run` keeps .prose/, or --project-dir DIR",
    ),
    "I002": Guidance(
        "Program Invocation: contracts come from the imported program",
        "check again once `prose install` or a run has cached it in the project",
    ),
}


def diagnostic(
    code: str,
    message: str,
    span: Span,
    path: str,
    *,
    help: str | None = None,
    fix: Fix | None = None,
    rule: str | None = None,
) -> Diagnostic:
    """A diagnostic with its code's severity and (unless given) default rule and help line."""
    guidance = GUIDANCE.get(code)
    return Diagnostic(
        code,
        CODES[code].severity,
        message,
        span,
        path,
        rule=rule if rule is not None else (guidance.rule if guidance else ""),
        help=help if help is not None else (guidance.help if guidance else ""),
        fix=fix,
    )
