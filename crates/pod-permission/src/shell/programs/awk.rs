//! `awk`: reading a program far enough to know whether it runs commands (`system`, pipes) or
//! writes files (`print > FILE`).

use super::*;

pub(super) fn awk(name: &str, args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "bcCDghLMnNOPrsStV",
        values: "vFefEil",
        optional: "dop",
        long_flags: &[
            "characters-as-bytes",
            "traditional",
            "copyright",
            "gen-pot",
            "help",
            "lint",
            "bignum",
            "use-lc-numeric",
            "non-decimal-data",
            "optimize",
            "posix",
            "re-interval",
            "no-optimize",
            "sandbox",
            "lint-old",
            "version",
            "csv",
        ],
        long_values: &[
            "assign",
            "field-separator",
            "source",
            "file",
            "exec",
            "include",
            "load",
        ],
        long_optional: &["dump-variables", "debug", "pretty-print", "profile"],
        permute: false,
        ..Spec::default()
    };
    let s = match scan(name, args, 0, &spec) {
        Ok(s) => s,
        Err(o) => return Analysis::from(o),
    };
    for opaque in [
        "f",
        "--file",
        "E",
        "--exec",
        "i",
        "--include",
        "l",
        "--load",
    ] {
        if s.has(opaque) {
            return Analysis::opaque(format!(
                "`{name} {}` loads a program from a file",
                if opaque.len() == 1 {
                    format!("-{opaque}")
                } else {
                    opaque.to_string()
                }
            ));
        }
    }
    let mut programs = s.values(&["e", "--source"], args);
    if programs.is_empty() {
        match args.get(s.end) {
            Some(w) => programs.push(ValueRef::Word(w)),
            None => return Analysis::default(),
        }
    }
    for p in &programs {
        match p.text() {
            Some(text) => {
                if let Some(why) = awk_program_runs(text) {
                    return Analysis::opaque(why);
                }
            }
            None => return Analysis::from(Opaque::DynamicScript),
        }
    }
    Analysis::default()
}

/// Why an awk program may run a command or write a file: `system`, a pipe (`|`, `|&`), `print`
/// or `printf` redirected with `>` (outside parentheses), `@` directives or indirect calls.
///
/// Strings, regular expressions and comments are skipped the way awk's lexer reads them: `/`
/// starts a regular expression where an operand is expected, and divides after one. Where awks
/// read the program differently, every reading is checked and the program runs nothing only if
/// none of them does: a `/` after `length`, `getline`, `++` or `--` (mawk starts a regular
/// expression, busybox and gawk divide), and a `/` inside a bracket expression (mawk reads
/// `[]/]` and `[[:alpha:]/]` as one bracket, busybox ends the expression at the first `/`).
pub(in crate::shell) fn awk_program_runs(program: &str) -> Option<String> {
    let mut scan = AwkScan {
        program,
        b: program.as_bytes(),
        steps: program.len().saturating_mul(64).saturating_add(100_000),
        seen: Default::default(),
    };
    scan.from(
        At {
            i: 0,
            operand: true,
            ambiguous: false,
            in_print: false,
            parens: 0,
        },
        false,
    )
}

/// Where a reading of an awk program is, and what its lexer expects there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct At {
    i: usize,
    /// An operand is expected: `/` starts a regular expression.
    operand: bool,
    /// After `length`, `getline`, `++` or `--`: awks differ on what `/` is.
    ambiguous: bool,
    in_print: bool,
    parens: usize,
}

struct AwkScan<'a> {
    program: &'a str,
    b: &'a [u8],
    /// Steps every reading together may take.
    steps: usize,
    /// Places readings reached and found running nothing from (a reading that gets there again
    /// would find the same).
    seen: std::collections::HashSet<At>,
}

impl AwkScan<'_> {
    /// Why the program, read from `at` on, may run a command or write a file. `forked`: this
    /// reading is one of several, so where it is not awk at all (a regular expression that never
    /// ends) awk rejects the program in that reading and runs nothing.
    fn from(&mut self, mut at: At, forked: bool) -> Option<String> {
        if forked && !self.seen.insert(at) {
            return None;
        }
        loop {
            if self.steps == 0 {
                return Some("the awk program has too many readings to check".into());
            }
            self.steps -= 1;
            let &c = self.b.get(at.i)?;
            match c {
                b'"' => {
                    at.i += 1;
                    while let Some(&d) = self.b.get(at.i) {
                        at.i += if d == b'\\' { 2 } else { 1 };
                        if d == b'"' {
                            break;
                        }
                    }
                    at.operand = false;
                    at.ambiguous = false;
                    continue;
                }
                b'#' => {
                    while self.b.get(at.i).is_some_and(|&d| d != b'\n') {
                        at.i += 1;
                    }
                    continue;
                }
                // A line continuation is a blank.
                b'\\' if self.b.get(at.i + 1) == Some(&b'\n') => {
                    at.i += 2;
                    continue;
                }
                b'/' if at.ambiguous => {
                    // Division in one reading, a regular expression in the other.
                    let divides = At {
                        i: at.i + 1,
                        operand: true,
                        ambiguous: false,
                        ..at
                    };
                    if let Some(why) = self.from(divides, true) {
                        return Some(why);
                    }
                    return self.regex(at, true);
                }
                b'/' if at.operand => return self.regex(at, forked),
                b'|' => {
                    if self.b.get(at.i + 1) == Some(&b'|') {
                        at.i += 2;
                        at.operand = true;
                        at.ambiguous = false;
                        continue;
                    }
                    return Some("an awk program pipes to or from a command".into());
                }
                b'>' if at.in_print && at.parens == 0 => {
                    return Some("an awk program prints to a file (`print > ...`)".into());
                }
                b'@' => return Some("an awk program uses @-directives or indirect calls".into()),
                b'+' | b'-' if self.b.get(at.i + 1) == Some(&c) => {
                    at.i += 2;
                    at.operand = true;
                    at.ambiguous = true;
                    continue;
                }
                b'(' => {
                    at.parens += 1;
                    at.operand = true;
                    at.ambiguous = false;
                }
                b')' => {
                    at.parens = at.parens.saturating_sub(1);
                    at.operand = false;
                    at.ambiguous = false;
                }
                b';' | b'\n' | b'{' | b'}' => {
                    at.in_print = false;
                    at.parens = 0;
                    at.operand = true;
                    at.ambiguous = false;
                }
                b']' => {
                    at.operand = false;
                    at.ambiguous = false;
                }
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = at.i;
                    while self
                        .b
                        .get(at.i)
                        .is_some_and(|&d| d.is_ascii_alphanumeric() || d == b'_')
                    {
                        at.i += 1;
                    }
                    let word = &self.program[start..at.i];
                    at.ambiguous = false;
                    match word {
                        "system" => return Some("an awk program calls system()".into()),
                        "print" | "printf" => {
                            at.in_print = true;
                            at.parens = 0;
                            at.operand = true;
                        }
                        "length" | "getline" => {
                            at.operand = false;
                            at.ambiguous = true;
                        }
                        "if" | "while" | "for" | "do" | "else" | "return" | "in" | "case"
                        | "delete" | "exit" => at.operand = true,
                        _ => at.operand = false,
                    }
                    continue;
                }
                c if c.is_ascii_digit() || c == b'.' => {
                    at.operand = false;
                    at.ambiguous = false;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => {
                    at.operand = true;
                    at.ambiguous = false;
                }
            }
            at.i += 1;
        }
    }

    /// From the `/` opening a regular expression at `at.i`: the rest of the program after
    /// every place the expression may end.
    fn regex(&mut self, at: At, mut forked: bool) -> Option<String> {
        let mut i = at.i + 1;
        let mut bracket = false;
        loop {
            if self.steps == 0 {
                return Some("the awk program has too many readings to check".into());
            }
            self.steps -= 1;
            match self.b.get(i) {
                None | Some(b'\n') => {
                    return (!forked).then(|| "an awk regular expression is not closed".into())
                }
                Some(b'\\') => i += 2,
                Some(b'[') => {
                    bracket = true;
                    i += 1;
                }
                Some(b'/') => {
                    let after = At {
                        i: i + 1,
                        operand: false,
                        ambiguous: false,
                        ..at
                    };
                    if !bracket {
                        return self.from(after, forked);
                    }
                    // After a `[`: the expression ends here for some awks, and goes on inside
                    // a bracket expression for others.
                    if let Some(why) = self.from(after, true) {
                        return Some(why);
                    }
                    forked = true;
                    i += 1;
                }
                Some(_) => i += 1,
            }
        }
    }
}
