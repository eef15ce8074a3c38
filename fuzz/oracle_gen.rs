//! The shell oracle's grammar-based generator (docs/hardening.md section 6), shared by the CI
//! oracle (`tests/engine/shell_oracle.rs`, driven by a seeded random generator) and the `oracle`
//! fuzz target (`fuzz/fuzz_targets/oracle.rs`, driven by the fuzz input's bytes, so that
//! libFuzzer's mutations become changes of construct). It writes command lines mixing the
//! constructs of every class found so far: substitutions, here-documents (also after `;` and
//! `&`), arithmetic, parameter operators with literal text, name-taking builtins, wrappers known
//! and unknown, interpreters and their option tables, code-running options, redirections,
//! `sh -c`, option injection through braces and globs, repeated options, awk's readings of `/`,
//! keywords such as `time`, programs that run programs, files programs write, `xargs` and
//! computed operands. Every choice it makes is one call of [`Choices`].

/// Where the generator's choices come from.
pub trait Choices {
    /// A number in `0..n` (`n` > 0), drawn as `u32`.
    fn below(&mut self, n: u32) -> u32;
    /// An index in `0..len` (`len` > 0), drawn as `usize`.
    fn index(&mut self, len: usize) -> usize;
}

/// Choices read from bytes (a fuzz input): one byte per choice, taken modulo the number of
/// alternatives; past the end every choice is the first alternative, so every byte string is a
/// line and a short one stays short.
pub struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data, at: 0 }
    }

    fn next(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
}

impl Choices for Bytes<'_> {
    fn below(&mut self, n: u32) -> u32 {
        u32::from(self.next()) % n
    }

    fn index(&mut self, len: usize) -> usize {
        usize::from(self.next()) % len
    }
}

/// The grammar-based generator.
pub struct Gen<C> {
    pub choices: C,
}

impl<C: Choices> Gen<C> {
    fn below(&mut self, n: u32) -> u32 {
        self.choices.below(n)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.choices.index(items.len())]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }

    fn payload(&mut self) -> String {
        self.pick(&["rm -rf victim", "touch pwned", "rm victim/f", "touch out9"])
            .to_string()
    }

    pub fn script(&mut self, depth: usize) -> String {
        let n = 1 + self.below(3);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push_str(self.pick(&["; ", " && ", " || ", " | ", "\n", " & ", " |& "]));
            }
            s.push_str(&self.command(depth));
        }
        s
    }

    fn command(&mut self, depth: usize) -> String {
        let roll = self.below(100);
        if roll < 8 {
            return self.payload();
        }
        if roll < 20 && depth < 3 {
            return self.compound(depth + 1);
        }
        if roll < 44 && depth < 3 {
            return self.construct(depth + 1);
        }
        if roll < 50 {
            let a = self.assignment(depth);
            return if self.chance(50) {
                a
            } else {
                format!("{a} {}", self.simple(depth))
            };
        }
        self.simple(depth)
    }

    fn compound(&mut self, depth: usize) -> String {
        let s = self.script(depth);
        let w = self.word(depth);
        let p = self.payload();
        match self.below(18) {
            14 => format!("cat <<EOF\nE\\\nOF\n{p}\nEOF"),
            15 => format!("sh -c '{}'", s.replace('\'', "")),
            16 => format!("bash -c '{}' '{p}' x", s.replace('\'', "")),
            17 => format!("set -H; set -o history\n: {p}\n!:1-$"),
            0 => format!("{{ {s}; }}"),
            1 => format!("( {s} )"),
            2 => format!("if {s}; then {}; fi", self.script(depth)),
            3 => format!("for i in {w}; do {s}; done"),
            4 => format!("case {w} in *) {s};; esac"),
            5 => format!("f() {{ {s}; }}; f"),
            6 => format!("(( {w} ))"),
            7 => format!("[[ {w} -eq 0 ]]"),
            8 => format!("[[ -v {w} ]]"),
            9 => format!("(({s}) )"),
            10 => format!("while false; do {s}; done"),
            11 => format!("[[ {w} == x ]] && {s}"),
            12 => format!("echo $( ({s}) )"),
            _ => format!("{s} &"),
        }
    }

    /// The constructs of issue 26's classes, each with a payload where bash would run it.
    fn construct(&mut self, depth: usize) -> String {
        let p = self.payload();
        match self.below(13) {
            0 => self.heredoc_after_separator(&p, depth),
            1 => self.process_substitution_anywhere(&p),
            2 => self.parameter_with_text(),
            3 => self.option_value_that_splits(&p),
            4 => self.repeated_option(&p),
            5 => self.interpreter(&p),
            6 => {
                let keyword = self.pick(&[
                    "time",
                    "time -p",
                    "time --",
                    "time -p --",
                    "!",
                    "time !",
                    "time -- !",
                    "! time",
                ]);
                format!("{keyword} {}", self.command(depth))
            }
            7 => self.awk_reading(&p),
            8 => self.program_running_a_program(&p),
            9 => self.file_a_program_writes(),
            10 => self.xargs(&p),
            11 => self.computed_operand(&p),
            _ => {
                // An option or operand in a word that expands: what a program sees.
                let head = self.pick(&[
                    "find . -maxdepth 0",
                    "sort notes",
                    "git diff --no-index notes",
                    "timeout 1",
                    "env",
                    "nice",
                    "sed -n p",
                    "git -C",
                ]);
                format!("{head} {} {}", self.word(depth), self.word(depth))
            }
        }
    }

    /// A here-document whose command ends at `;` or `&`: its body follows the next newline.
    fn heredoc_after_separator(&mut self, p: &str, depth: usize) -> String {
        let head = self.pick(&["echo", "cat", ":", "true", "printf %s", "echo hi"]);
        let sep = self.pick(&[";", " ;", "&", " &", " && true;", " | cat;", "; echo a &"]);
        let next = if self.chance(50) {
            self.simple(depth)
        } else {
            self.pick(&["echo b", "true", ":", "wait"]).to_string()
        };
        let body = match self.below(6) {
            0 => format!("$({p})"),
            1 => format!("`{p}`"),
            2 => format!("${{x:-$({p})}}"),
            3 => format!("a $({p}) b"),
            4 => format!("$(({p}) )"),
            _ => "plain text".to_string(),
        };
        match self.below(4) {
            0 => format!("{head} <<E{sep} {next}\n{body}\nE"),
            1 => format!("{head} <<'E'{sep} {next}\n{body}\nE"),
            2 => format!("{head} <<-E{sep} {next}\n\t{body}\n\tE"),
            _ => format!("{head} <<A{sep} {head} <<B{sep}\n{body}\nA\n{body}\nB"),
        }
    }

    /// `<(...)` and `>(...)` in every word position bash reads them in (and some it does not).
    fn process_substitution_anywhere(&mut self, p: &str) -> String {
        let ps = format!("{}({p})", self.pick(&["<", ">"]));
        let set = if self.chance(30) { "x=a; " } else { "" };
        let line = match self.below(18) {
            0 => format!("[[ -n {ps} ]]"),
            1 => format!("[[ x < {ps} ]]"),
            2 => format!("[[ {ps} == x ]]"),
            3 => format!("echo ${{x:-{ps}}}"),
            4 => format!("echo ${{x:+{ps}}}"),
            5 => format!("echo ${{x/a/{ps}}}"),
            6 => format!("echo ${{x#{ps}}}"),
            7 => format!("y={ps}"),
            8 => format!("a=({ps})"),
            9 => format!("case {ps} in *) :;; esac"),
            10 => format!("for i in {ps}; do :; done"),
            11 => format!("cat <<< {ps}"),
            12 => format!("echo > {ps}"),
            13 => format!("echo ${{x:-a{ps}}}"),
            14 => format!("declare y={ps}"),
            15 => format!("echo \"${{x:-{ps}}}\""),
            16 => format!("echo a{ps}"),
            _ => format!("y={ps} true"),
        };
        format!("{set}{line}")
    }

    /// Every parameter-expansion operator with literal text, given to programs that read
    /// options.
    fn parameter_with_text(&mut self) -> String {
        let var = self.pick(&["x", "HOME", "PWD", "1", "y", "@"]);
        let op = self.pick(&[
            ":-", "-", ":=", "=", ":+", "+", ":?", "?", "#", "##", "%", "%%", "/a/", "//a/", "/#/",
            "/%/", "/*/", "^", "^^", ",", ",,", ":0:1",
        ]);
        let text = self.pick(&[
            "-exec rm -rf victim ;",
            "-exec touch pwned ;",
            "-delete",
            "-c",
            "-c 'rm -rf victim'",
            "--output=x.env",
            "-ox.env",
            "rm -rf victim",
            "-e 1e\\ touch\\ pwned",
            "-fprint x.env",
            "d",
            "",
        ]);
        let op = if op == ":0:1" {
            op.to_string()
        } else {
            format!("{op}{text}")
        };
        let head = self.pick(&[
            "find victim -maxdepth 0",
            "echo",
            "sort notes",
            "git diff --no-index notes .env",
            "env",
            "timeout 1",
            "bash",
            "sh",
            "printf",
            "xargs",
            "sed -n p notes",
            "nice",
        ]);
        let set = self.pick(&["", "", "x=a; ", "y=-; ", "set -- -c; "]);
        let quote = if self.chance(20) { "\"" } else { "" };
        format!("{set}{head} {quote}${{{var}{op}}}{quote}")
    }

    /// An option value that brace expansion, splitting or a glob makes several words.
    fn option_value_that_splits(&mut self, p: &str) -> String {
        let (prog, rest) = p.split_once(' ').unwrap_or((p, ""));
        match self.below(12) {
            0 => "find victim -maxdepth 0 -name {x,-delete}".into(),
            1 => "sort -o {out1,x.env} notes".into(),
            2 => "git -C {.,-c,core.fsmonitor=touch\\ pwned} status".into(),
            3 => "git -C {.,diff,--output=x.env} --no-index notes .env".into(),
            4 => format!("timeout {{1,{prog}}} {rest}"),
            5 => format!("d='1 {p}'; timeout $d"),
            6 => format!("env -u {{x,{prog}}} {rest}"),
            7 => format!("nice -n {{1,{prog}}} {rest}"),
            8 => format!("python3 -W {{ignore,-c}} 'import os; os.system(\"{p}\")'"),
            9 => "git -C * status".into(),
            10 => format!("stdbuf -o {{L,{prog}}} {rest}"),
            _ => format!("sqlite3 -separator {{x,-cmd,'.shell {p}'}} x.db 'select 1'"),
        }
    }

    /// An option given twice, where programs differ on which one counts.
    fn repeated_option(&mut self, p: &str) -> String {
        match self.below(8) {
            0 => format!("script -q -c true -c '{p}' /dev/null"),
            1 => format!("script -q -c '{p}' -c true /dev/null"),
            2 => "sort -o out1 -o x.env notes".into(),
            3 => "env -C secrets -C . tee x.env < notes".into(),
            4 => format!("echo '{p}' | xargs -I A -I B sh -c B"),
            5 => format!("sed -e p -e '1e {p}' notes"),
            6 => format!("timeout -s KILL -s TERM 1 {p}"),
            _ => format!("cp -t secrets -t . notes x.env; {p}"),
        }
    }

    /// An interpreter given options around its code: known, unknown, taking values.
    fn interpreter(&mut self, p: &str) -> String {
        match self.below(4) {
            0 => {
                let opts = self.pick(&[
                    "",
                    "-u",
                    "-X dev",
                    "-W ignore",
                    "--check-hash-based-pycs never",
                    "-Wignore",
                    "-bB",
                    "-I",
                    "-q",
                    "-E -s",
                    "-J x",
                ]);
                let code = format!("import os; os.system('{p}')");
                match self.below(3) {
                    0 => format!("python3 {opts} -c \"{code}\""),
                    1 => format!("python3 {opts} notes"),
                    _ => format!("python3 {opts} -m timeit -n 1 \"{code}\""),
                }
            }
            1 => {
                let opts = self.pick(&[
                    "",
                    "-C x",
                    "--title x",
                    "--no-warnings",
                    "--stack-size=100",
                    "--conditions x",
                    "--inspect-port 0",
                    "--frobnicate x",
                ]);
                let code = format!("require('child_process').execSync('{p}')");
                match self.below(3) {
                    0 => format!("node {opts} -e \"{code}\""),
                    1 => format!("node {opts} -pe \"{code}\""),
                    _ => format!("node {opts} notes"),
                }
            }
            2 => {
                let opts =
                    self.pick(&["", "-I x", "-Ix", "-l", "-w", "-ln", "-0777", "-Z", "-i.x"]);
                let code = format!("system('{p}')");
                match self.below(2) {
                    0 => format!("perl {opts} -e \"{code}\""),
                    _ => format!("perl {opts} notes"),
                }
            }
            _ => {
                let prog = self.pick(&["bash", "sh"]);
                let opts = self.pick(&["", "-e", "-o pipefail", "-x", "--norc", "-O extglob"]);
                format!("{prog} {opts} -c '{p}'")
            }
        }
    }

    /// awk programs where awks read `/` differently.
    fn awk_reading(&mut self, p: &str) -> String {
        let sys = format!("system(\"{p}\")");
        let awk = self.pick(&["awk", "mawk", "busybox awk"]);
        let program = match self.below(11) {
            0 => format!("BEGIN {{ length /#/; {sys} }}"),
            1 => format!("BEGIN {{ x = length /2; {sys} #/ }}"),
            2 => format!("BEGIN {{ a = 1; b = a++ /2; {sys} #/ }}"),
            3 => format!("BEGIN {{ getline /2; {sys} #/ }}"),
            4 => format!("BEGIN {{ x = \"a\" ~ /[]/]#/; {sys} }}"),
            5 => format!("BEGIN {{ x = \"a\" ~ /[[:alpha:]/]#/; {sys} }}"),
            6 => format!("BEGIN {{ x = 1 \\\n/2; {sys} #/\n}}"),
            7 => format!("BEGIN {{ x = \"a\" ~ /[^]/]#/; {sys} }}"),
            8 => "{ print length / 2 }".to_string(),
            9 => "BEGIN { print length(\"ab\") / 2 }".to_string(),
            _ => format!("BEGIN {{ x = \"a\" ~ /[/]#/; {sys} }}"),
        };
        format!("{awk} '{program}' notes < /dev/null")
    }

    /// A program that runs the program in its arguments, under a name or form the deny rules
    /// must still see.
    fn program_running_a_program(&mut self, p: &str) -> String {
        let form = self.pick(&[
            "setarch x86_64 /bin/",
            "setarch x86_64 -R ",
            "linux64 ",
            "busybox ",
            "/lib64/ld-linux-x86-64.so.2 /bin/",
            "/lib64/ld-linux-x86-64.so.2 --argv0 x /bin/",
            "time -- /bin/",
            "time -p -- ",
            "jobs -x ",
            "jobs -lx ",
            "command -p ",
            "nohup /bin/",
            "stdbuf -oL /bin/",
            "nice -n 1 /bin/",
            "exec -a x /bin/",
            "env -C secrets /bin/",
            "taskset 1 /bin/",
            "unshare -U /bin/",
            "/usr/bin/env ",
        ]);
        format!("{form}{p}")
    }

    /// A file a program writes, named as the program reads it.
    fn file_a_program_writes(&mut self) -> String {
        self.pick(&[
            "cp .env secrets",
            "cp notes x.env",
            "cp -t secrets .env",
            "cp --target-directory=secrets .env",
            "mv notes x.env",
            "ln .env secrets",
            "ln -s .env secrets/",
            "sort -ox.env notes",
            "sort --output=x.env notes",
            "shuf -o x.env notes",
            "uniq notes x.env",
            "env -C secrets tee x.env < notes",
            "env --chdir=secrets cp ../notes x.env",
            "git diff --no-index --output=x.env notes .env",
            "git -C secrets diff --no-index --output=x.env key ../notes",
            "dd if=notes of=x.env status=none",
            "tee x.env < notes",
            "install notes x.env",
            "install -t secrets .env",
            "mkdir d && cp .env d",
            "cp notes secrets/ && cp .env secrets/",
        ])
        .to_string()
    }

    /// xargs with a command, its input appended or put in place of a replace string.
    fn xargs(&mut self, p: &str) -> String {
        match self.below(10) {
            0 => "echo victim | xargs rm -rf".into(),
            1 => "echo victim | xargs -0 rm -rf".into(),
            2 => "echo '-exec rm -rf victim ;' | xargs find . -maxdepth 0".into(),
            3 => format!("echo '{p}' | xargs -I{{}} sh -c '{{}}'"),
            4 => format!("echo x | xargs -I{{}} {p}"),
            5 => format!("echo -c '{p}' | xargs sh"),
            6 => "echo victim | xargs --version".into(),
            7 => "find . -name notes | xargs grep -n n".into(),
            8 => "echo --output=x.env | xargs git diff --no-index notes .env".into(),
            _ => format!("echo '{p}' | xargs env"),
        }
    }

    /// Operands computed at run time: substitutions, globs.
    fn computed_operand(&mut self, p: &str) -> String {
        match self.below(10) {
            0 => "find victim $(echo -delete)".into(),
            1 => "find victim $(git merge-base HEAD HEAD 2>/dev/null)".into(),
            2 => "git diff $(git rev-parse --verify HEAD 2>/dev/null)".into(),
            3 => "git diff $(git log -1 --format=%s 2>/dev/null)".into(),
            4 => "echo > ./-delete; find victim -depth -o -name x -o -de*".into(),
            5 => "find . -name *.py".into(),
            6 => "echo > ./-delete; find victim -name x -o *".into(),
            7 => format!("timeout 1 $(echo {p})"),
            8 => "find victim -name *.env -o -name x".into(),
            _ => format!("timeout `echo 1` {p}"),
        }
    }

    fn assignment(&mut self, depth: usize) -> String {
        let name = self.pick(&[
            "x", "y", "a", "PS4", "BASH_ENV", "r", "a[0]", "a[x]", "OPT", "pc", "bash", "hBc",
            "ZIPOPT", "i",
        ]);
        let p = self.payload();
        let value = match self.below(12) {
            0 => format!("'$({p})'"),
            1 => format!("'a[$({p})]'"),
            2 => format!("'() {{ {p}; }}'"),
            3 => format!("\"$({p})\""),
            4 => format!("'{p}'"),
            5 => "-c".into(),
            6 => "-exec".into(),
            7 => "rm".into(),
            8 => format!("({} {})", self.word(depth), self.word(depth)),
            _ => self.word(depth),
        };
        format!("{name}={value}")
    }

    fn simple(&mut self, depth: usize) -> String {
        let head = if self.chance(55) {
            self.pick(&["echo", "printf '%s\\n'", "true", ":", "echo -n", "printf"])
                .to_string()
        } else {
            let p = self.payload();
            let prog = self.pick(&[
                "eval",
                "trap",
                "let",
                "declare -i",
                "read",
                "printf -v",
                "mapfile -C",
                "test -v",
                "set -x;",
                "shopt -s expand_aliases; alias echo=",
                "hash -p /usr/bin/rm",
                "source",
                ".",
                "exec",
                "command",
                "builtin",
                "env",
                "timeout 1",
                "nice",
                "nohup",
                "xargs",
                "find . -exec",
                "sed -n",
                "awk",
                "bash -c",
                "sh -c",
                "taskset 1",
                "setsid",
                "flock lock",
                "time",
                "declare -n",
                "export",
                "local",
                "unset",
                "cd victim;",
                "ln -sf .env out1;",
                "env -S",
                "command -v",
                "bash",
                "sh",
                "printf -v x",
                "printf -vx",
                "read -ax",
                "command printf -v x",
                "builtin read x",
                "wait -n -p",
                "declare -a",
                "sed",
                "split -l1",
                "zip x.zip",
                "git grep --no-index -O",
                "make --ev=",
                "ssh -4o",
                "python3 -i notes",
                "cp notes",
                "dd if=notes of=",
                "sort -o",
                "truncate -s 0",
                "ln -s notes",
                "tee",
                "touch",
                "mv notes",
                "install notes",
                "sh -c",
                "dash -c",
                "set -H;",
                "echo $((MACHTYPE)) $(( $- )) $(( $0 ))",
                "echo",
                "echo",
                "echo",
                ":",
            ]);
            if self.chance(30) {
                format!("{prog} {p}")
            } else {
                prog.to_string()
            }
        };
        let mut s = head;
        for _ in 0..self.below(4) {
            s.push(' ');
            s.push_str(&self.word(depth));
        }
        for _ in 0..self.below(2) {
            s.push(' ');
            s.push_str(&self.redirect(depth));
        }
        s
    }

    fn redirect(&mut self, depth: usize) -> String {
        let p = self.payload();
        match self.below(12) {
            0 => "> out1".into(),
            1 => ">> out2".into(),
            2 => "2> out3".into(),
            3 => "< notes".into(),
            4 => "> notes".into(),
            5 => "> $x".into(),
            6 => format!("<<E\n$({p})\nE\n"),
            7 => format!("<<'E'\n$({p})\nE\n"),
            8 => format!("<<< \"$({p})\""),
            9 => "> /proc/self/cwd/out4".into(),
            10 => format!("> >({})", self.script(depth + 1)),
            _ => "2>&1".into(),
        }
    }

    fn word(&mut self, depth: usize) -> String {
        let p = self.payload();
        let nested = depth < 3;
        match self.below(36) {
            0 => "hi".into(),
            1 => format!("'{p}'"),
            2 => format!("\"{p}\""),
            3 => "$x".into(),
            4 => "\"$x\"".into(),
            5 => "${x}".into(),
            6 => "${x:-d}".into(),
            7 => "${#x}".into(),
            8 => "${x@P}".into(),
            9 => "${!r}".into(),
            10 => "${a[x]}".into(),
            11 => "${a[0]}".into(),
            12 => "${x:1}".into(),
            13 => "$((x))".into(),
            14 => "$((1+2))".into(),
            15 if nested => format!("$({})", self.script(depth + 1)),
            16 if nested => format!("`{}`", self.script(depth + 1).replace('\\', "")),
            17 if nested => format!("<({})", self.script(depth + 1)),
            18 => "*".into(),
            19 => "v*".into(),
            20 => "{a,b}".into(),
            21 => "$'\\x72m'".into(),
            22 if nested => format!("$(({}) )", self.script(depth + 1)),
            23 => "${x:=y}".into(),
            24 => format!("\"${{x:-$({p})}}\""),
            25 => "\\$x".into(),
            26 => "$OPT".into(),
            27 => "-c".into(),
            28 => "-exec".into(),
            29 => "'{}'".into(),
            30 => "\\;".into(),
            31 => format!("$'{p}'"),
            32 => "a[$(echo 0)]".into(),
            33 => self
                .pick(&[
                    "{-v,x}",
                    "[-]i",
                    "{-e1e\\ rm\\ -rf\\ victim,x}",
                    "$0",
                    "$-",
                    "$_",
                    "x.env",
                    "'a[$(rm -rf victim)]'",
                    "$((MACHTYPE))",
                    "'s[a[b[;e rm -rf victim'",
                    "':a e touch pwned'",
                    "'a foo\\\\\ne touch pwned'",
                    "'1e touch pwned'",
                    "'s/x/y/w x.env'",
                    "--filter='rm -rf victim'",
                    "-vPS4",
                    "{--filter=touch\\ pwned,x}",
                    "'$(rm -rf victim)'",
                    "-i",
                    "[z]",
                    "x[z]",
                    "--upload-pac='touch pwned;:'",
                    "-O'touch pwned #'",
                    "--unzip-command='touch pwned #'",
                ])
                .to_string(),
            _ => "victim".into(),
        }
    }
}
