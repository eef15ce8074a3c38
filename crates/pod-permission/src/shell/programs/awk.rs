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
/// Strings, regular expressions and comments are skipped the way awk's lexer reads them: `/`
/// starts a regular expression where an operand is expected, and divides after one.
pub(super) fn awk_program_runs(program: &str) -> Option<String> {
    let b = program.as_bytes();
    let mut i = 0;
    let mut operand_expected = true;
    let mut in_print = false;
    let mut parens = 0usize;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                i += 1;
                while let Some(&d) = b.get(i) {
                    i += if d == b'\\' { 2 } else { 1 };
                    if d == b'"' {
                        break;
                    }
                }
                operand_expected = false;
                continue;
            }
            b'#' => {
                while b.get(i).is_some_and(|&d| d != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'/' if operand_expected => {
                i += 1;
                let mut bracket = false;
                while let Some(&d) = b.get(i) {
                    match d {
                        b'\\' => i += 1,
                        b'[' => bracket = true,
                        b']' => bracket = false,
                        b'/' if !bracket => break,
                        b'\n' => return Some("an awk regular expression is not closed".into()),
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                operand_expected = false;
                continue;
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    operand_expected = true;
                    continue;
                }
                return Some("an awk program pipes to or from a command".into());
            }
            b'>' if in_print && parens == 0 => {
                return Some("an awk program prints to a file (`print > ...`)".into());
            }
            b'@' => return Some("an awk program uses @-directives or indirect calls".into()),
            b'(' => {
                parens += 1;
                operand_expected = true;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                operand_expected = false;
            }
            b';' | b'\n' | b'{' | b'}' => {
                in_print = false;
                parens = 0;
                operand_expected = true;
            }
            b']' => operand_expected = false,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|&d| d.is_ascii_alphanumeric() || d == b'_')
                {
                    i += 1;
                }
                let word = &program[start..i];
                match word {
                    "system" => return Some("an awk program calls system()".into()),
                    "print" | "printf" => {
                        in_print = true;
                        parens = 0;
                        operand_expected = true;
                    }
                    "if" | "while" | "for" | "do" | "else" | "return" | "in" | "case"
                    | "getline" | "delete" | "exit" => operand_expected = true,
                    _ => operand_expected = false,
                }
                continue;
            }
            c if c.is_ascii_digit() || c == b'.' => operand_expected = false,
            b' ' | b'\t' | b'\r' => {}
            _ => operand_expected = true,
        }
        i += 1;
    }
    None
}
