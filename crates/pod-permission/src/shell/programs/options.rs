//! Option scanning as each program's getopt does it: bundled short options, abbreviated long
//! options, values attached or separate, `--`; an option the table does not know, or one computed
//! at run time, makes the command opaque.

use super::*;

/// A getopt-style option table.
#[derive(Default)]
pub(super) struct Spec<'a> {
    /// Short options without a value.
    pub(super) flags: &'a str,
    /// Short options with a value (the rest of the cluster, or the next word).
    pub(super) values: &'a str,
    /// Short options whose value can only be attached (`-i[SUFFIX]`).
    pub(super) optional: &'a str,
    pub(super) long_flags: &'a [&'a str],
    pub(super) long_values: &'a [&'a str],
    pub(super) long_optional: &'a [&'a str],
    /// Options may come after operands (GNU getopt's default); otherwise the first operand ends
    /// them (wrappers: the command's own options follow).
    pub(super) permute: bool,
    /// A lone `-NUMBER` is an option (`nice -10`).
    pub(super) numbers: bool,
}

/// One option as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opt {
    /// `c` for `-c`, `--command` for long ones (full name).
    pub(super) name: String,
    pub(super) value: Option<OptValue>,
    /// The argument holding the option.
    pub(super) arg: usize,
}

impl Opt {
    /// Where the value is, as a file argument.
    pub(super) fn file(&self, args: &[Wd]) -> Option<FileArg> {
        match &self.value {
            Some(OptValue::Word(i)) => Some(FileArg::whole(*i)),
            Some(OptValue::Attached(text)) => {
                let len = args.get(self.arg)?.text.len();
                Some(FileArg {
                    arg: self.arg,
                    from: len.checked_sub(text.len())?,
                })
            }
            None => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum OptValue {
    Attached(String),
    Word(usize),
}

#[derive(Debug, Default)]
pub(super) struct Scanned {
    pub(super) opts: Vec<Opt>,
    /// Operand indexes, in order.
    pub(super) operands: Vec<usize>,
    /// Without `permute`: the index of the first operand (everything from it on is operands).
    pub(super) end: usize,
}

impl Scanned {
    pub(super) fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|o| o.name == name)
    }

    pub(super) fn values<'w>(&self, names: &[&str], args: &'w [Wd]) -> Vec<ValueRef<'w>> {
        self.opts
            .iter()
            .filter(|o| names.contains(&o.name.as_str()))
            .filter_map(|o| match &o.value {
                Some(OptValue::Attached(s)) => Some(ValueRef::Text(s.clone())),
                Some(OptValue::Word(i)) => args.get(*i).map(ValueRef::Word),
                None => None,
            })
            .collect()
    }
}

pub(super) enum ValueRef<'w> {
    Text(String),
    Word(&'w Wd),
}

impl ValueRef<'_> {
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            ValueRef::Text(s) => Some(s),
            ValueRef::Word(w) => w.lit(),
        }
    }
}

/// `--NAME[=VALUE]` where NAME abbreviates (is a prefix of) one of `longs`: getopt_long takes
/// any unambiguous prefix, so every prefix counts.
pub(super) fn long_prefix_of(t: &str, longs: &[&str]) -> bool {
    match t.strip_prefix("--") {
        Some(long) => {
            let name = long.split('=').next().unwrap_or("");
            !name.is_empty() && longs.iter().any(|l| l.starts_with(name))
        }
        None => false,
    }
}

/// A bundle of short options (`-4oX`) holding one of `letters` (value characters included: an
/// over-approximation).
pub(super) fn short_cluster_has(t: &str, letters: &str) -> bool {
    t.len() > 1
        && t.starts_with('-')
        && !t.starts_with("--")
        && t[1..].chars().any(|c| letters.contains(c))
}

pub(super) fn unknown_option(prog: &str, option: &str) -> Opaque {
    Opaque::Code(format!(
        "`{prog}` option `{option}` is not in the engine's table"
    ))
}

/// An option's value that bash may turn into several words, or none (`-C {.,push}`, `-C $d`):
/// the words after it would not be where the engine reads them.
pub(super) fn split_value(prog: &str, word: &Wd) -> Opaque {
    Opaque::Code(format!(
        "an option value of `{prog}` may expand to several words or none (`{}`), which moves the words after it",
        word.text
    ))
}

/// The value word at `i` of an option, checked: it exists and stays one word.
pub(super) fn value_word(prog: &str, args: &[Wd], i: usize, option: &str) -> Result<usize, Opaque> {
    match args.get(i) {
        None => Err(unknown_option(prog, option)),
        Some(w) if w.splits => Err(split_value(prog, w)),
        Some(_) => Ok(i),
    }
}

pub(super) fn computed_option(prog: &str, word: &Wd) -> Opaque {
    Opaque::Code(format!(
        "an argument of `{prog}` is computed at run time (`{}`) and may be an option",
        word.text
    ))
}

/// Resolves a long option name as getopt_long does: exact, or a unique prefix.
pub(super) fn long_match<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if let Some(exact) = candidates.iter().find(|c| **c == name) {
        return Some(exact);
    }
    let mut found = candidates.iter().filter(|c| c.starts_with(name));
    match (found.next(), found.next()) {
        (Some(one), None) if !name.is_empty() => Some(one),
        _ => None,
    }
}

/// Scans options from `start` following `spec`.
pub(super) fn scan(prog: &str, args: &[Wd], start: usize, spec: &Spec) -> Result<Scanned, Opaque> {
    let mut out = Scanned {
        end: args.len(),
        ..Scanned::default()
    };
    let mut i = start;
    let mut options_done = false;
    while i < args.len() {
        let w = &args[i];
        if options_done {
            out.operands.push(i);
            i += 1;
            continue;
        }
        if !w.is_static {
            if w.may_start_dash {
                return Err(computed_option(prog, w));
            }
            if !spec.permute {
                out.end = i;
                out.operands.extend(i..args.len());
                return Ok(out);
            }
            out.operands.push(i);
            i += 1;
            continue;
        }
        let t = w.text.as_str();
        if t == "--" {
            options_done = true;
            if !spec.permute {
                out.end = i + 1;
                out.operands.extend(i + 1..args.len());
                return Ok(out);
            }
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let all: Vec<&str> = spec
                .long_flags
                .iter()
                .chain(spec.long_values)
                .chain(spec.long_optional)
                .copied()
                .collect();
            let Some(full) = long_match(name, &all) else {
                return Err(unknown_option(prog, t));
            };
            let at = i;
            let value = if spec.long_values.contains(&full) {
                match attached {
                    Some(v) => Some(OptValue::Attached(v.to_string())),
                    None => {
                        i = value_word(prog, args, i + 1, t)?;
                        Some(OptValue::Word(i))
                    }
                }
            } else if spec.long_optional.contains(&full) {
                attached.map(|v| OptValue::Attached(v.to_string()))
            } else if attached.is_some() {
                return Err(unknown_option(prog, t));
            } else {
                None
            };
            out.opts.push(Opt {
                name: format!("--{full}"),
                value,
                arg: at,
            });
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            if spec.numbers && t[1..].bytes().all(|c| c.is_ascii_digit()) {
                out.opts.push(Opt {
                    name: "NUMBER".into(),
                    value: Some(OptValue::Attached(t[1..].to_string())),
                    arg: i,
                });
                i += 1;
                continue;
            }
            let cluster = &t[1..];
            let mut consumed_next = false;
            for (k, c) in cluster.char_indices() {
                let rest = &cluster[k + c.len_utf8()..];
                if spec.values.contains(c) {
                    let value = if rest.is_empty() {
                        consumed_next = true;
                        OptValue::Word(value_word(prog, args, i + 1, t)?)
                    } else {
                        OptValue::Attached(rest.to_string())
                    };
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: Some(value),
                        arg: i,
                    });
                    break;
                }
                if spec.optional.contains(c) {
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: (!rest.is_empty()).then(|| OptValue::Attached(rest.to_string())),
                        arg: i,
                    });
                    break;
                }
                if spec.flags.contains(c) {
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: None,
                        arg: i,
                    });
                    continue;
                }
                return Err(unknown_option(prog, &format!("-{c}")));
            }
            i += if consumed_next { 2 } else { 1 };
            continue;
        }
        // An operand (a lone `-` included).
        if !spec.permute {
            out.end = i;
            out.operands.extend(i..args.len());
            return Ok(out);
        }
        out.operands.push(i);
        i += 1;
    }
    Ok(out)
}
