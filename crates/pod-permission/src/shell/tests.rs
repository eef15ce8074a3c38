//! Unit tests of the shell analysis: the parser's reading of the subset, the walk, the program
//! table. The classes of the soundness issue are tested end to end in
//! `tests/binary/shell_soundness.rs`.

use super::parse;
use super::walk::literal_word;
use super::*;

/// The subjects' texts, guesses left out.
fn texts(s: &str) -> Vec<String> {
    extract(s)
        .commands
        .into_iter()
        .filter(|c| !c.guess)
        .map(|c| c.text)
        .collect()
}

fn find(s: &str, text: &str) -> ShellCommand {
    let subjects = extract(s);
    match subjects.commands.iter().find(|c| c.text == text) {
        Some(c) => c.clone(),
        None => panic!("{s:?}: no subject {text:?} in {:#?}", subjects.commands),
    }
}

fn understood(s: &str) {
    let subjects = extract(s);
    assert!(
        subjects
            .commands
            .iter()
            .all(|c| c.opaque.is_none() || c.opaque == Some(Opaque::Empty)),
        "{s:?} should be understood: {:#?}",
        subjects.commands
    );
    assert!(
        subjects.redirects.iter().all(|r| r.opaque.is_none()),
        "{s:?}: {:#?}",
        subjects.redirects
    );
}

fn unparsed(s: &str) {
    let subjects = extract(s);
    assert!(
        matches!(
            subjects.commands.as_slice(),
            [ShellCommand {
                opaque: Some(Opaque::ParseError(_)),
                ..
            }]
        ),
        "{s:?} should be unparsed: {:#?}",
        subjects.commands
    );
}

/// Some subject of `s` is opaque.
fn opaque(s: &str) {
    let subjects = extract(s);
    assert!(
        subjects
            .commands
            .iter()
            .any(|c| !c.guess && c.opaque.is_some()),
        "{s:?} should be opaque: {:#?}",
        subjects.commands
    );
}

fn writes(s: &str) -> Vec<(String, bool)> {
    extract(s)
        .redirects
        .into_iter()
        .filter(|r| r.kind == RedirectKind::Write)
        .map(|r| (r.path, r.opaque.is_some()))
        .collect()
}

// ---- the understood subset ----

#[test]
fn lists_pipelines_and_separators() {
    for sep in [" && ", "; ", " || ", " | ", " & ", "\n", " |& "] {
        let s = format!("git status{sep}rm -rf build");
        assert_eq!(texts(&s), ["git status", "rm -rf build"], "{s:?}");
    }
    assert_eq!(texts("! git log | head -n 3"), ["git log", "head -n 3"]);
    assert_eq!(texts("time git status"), ["git status"]);
    assert_eq!(texts("a &&\n\n b"), ["a", "b"]);
}

#[test]
fn compound_commands() {
    assert_eq!(texts("{ rm x; }"), ["rm x"]);
    assert_eq!(texts("( rm x )"), ["rm x"]);
    assert_eq!(
        texts("if a; then b; elif c; then d; else e; fi"),
        ["a", "b", "c", "d", "e"]
    );
    assert_eq!(
        texts("while a; do b; done; until c; do d; done"),
        ["a", "b", "c", "d"]
    );
    assert_eq!(texts("for f in a b; do rm $f; done"), ["rm $f"]);
    assert_eq!(texts("for f\ndo echo; done"), ["echo"]);
    assert_eq!(
        texts("case $x in a|b) rm x;; (c) ls;& *) pwd;;& esac"),
        ["rm x", "ls", "pwd"]
    );
    assert_eq!(texts("f() { rm x; }; f"), ["rm x", "f"]);
    assert_eq!(texts("function g { ls; }"), ["ls"]);
    assert_eq!(texts("function h() ( ls )"), ["ls"]);
    assert_eq!(texts("{ ls; } > out 2>&1"), ["ls"]);
    assert_eq!(texts("[[ -f x && $(rm y) == z ]]"), ["rm y"]);
}

#[test]
fn substitutions_are_walked_everywhere() {
    for s in [
        "echo $(rm x)",
        "echo `rm x`",
        "cat <(rm x)",
        "tee >(rm x)",
        "echo \"a $(rm x) b\"",
        "echo ${y:-$(rm x)}",
        "echo ${y/$(rm x)/z}",
        "x=$(rm x)",
        "a=(1 $(rm x))",
        "declare d=$(rm x)",
        "echo $(( $(rm x) ))",
        "cat <<< $(rm x)",
        "echo > $(rm x)",
        "for f in $(rm x); do :; done",
        "case $(rm x) in *) ;; esac",
        "cat <<EOF\n$(rm x)\nEOF",
        "echo $(echo $(rm x))",
        "echo \"$(echo \")\" $(rm x))\"",
    ] {
        find(s, "rm x");
    }
}

#[test]
fn strings_are_not_commands() {
    assert_eq!(texts("echo \"rm x\""), ["echo rm x"]);
    assert_eq!(texts("echo 'rm x' # rm y"), ["echo rm x"]);
    assert_eq!(texts("cat <<'EOF'\n$(rm x)\nEOF"), ["cat"]);
    assert_eq!(texts("echo '$(rm x)'"), ["echo $(rm x)"]);
    assert_eq!(texts("echo a#b"), ["echo a#b"]);
}

#[test]
fn words_are_normalized() {
    for s in [
        "/bin/rm x",
        "\\rm x",
        "'rm' x",
        "r\"\"m x",
        "rm \\\n x",
        "$'\\x72m' x",
        "$'r\\155' x",
    ] {
        assert!(
            texts(s).contains(&"rm x".to_string()),
            "{s:?}: {:?}",
            texts(s)
        );
    }
    let c = find("/bin/rm -rf x", "rm -rf x");
    assert_eq!(c.path_form.as_deref(), Some("/bin/rm -rf x"));
    // Words holding expansions keep their source form.
    assert_eq!(texts("cat \"$F\" ${G}"), ["cat \"$F\" ${G}"]);
}

#[test]
fn assignments_stay_in_the_subject_unless_harmless() {
    assert_eq!(texts("FOO=bar git status"), ["FOO=bar git status"]);
    assert_eq!(texts("LANG=C LC_ALL=C sort x"), ["sort x"]);
    let c = find("FOO=bar rm x", "FOO=bar rm x");
    assert_eq!(c.also_from, vec!["FOO=bar ".len()]);
    opaque("GIT_DIR=x git status");
    opaque("PATH=/tmp git status");
    opaque("LD_PRELOAD=x.so ls");
    opaque("PAGER='rm x' git log");
    // Assignments alone are not commands.
    understood("X=1; echo $X");
    assert!(texts("X=1").is_empty() || extract("X=1").commands[0].opaque == Some(Opaque::Empty));
}

#[test]
fn data_in_arguments_is_understood() {
    for s in [
        "echo \"$HOME\"",
        "ls $DIR",
        "for f in *.md; do echo \"$f\"; done",
        "git log --oneline -5 | head -n 3",
        "grep -rn 'fn main' src | wc -l",
        "echo $((1 + 2))",
        "echo ${#PATH} ${HOME:-/root} ${HOME%/*}",
        "cat <<EOF\nhello $USER\nEOF",
        "[[ -n $HOME && $# -gt 0 ]]",
        "printf '%s\\n' a b > out.txt",
        "echo a 2>/dev/null >> log.txt",
        "diff <(sort a) <(sort b)",
        "set -euo pipefail; echo ok",
        "x=(1 2 3); echo ${x[1]} ${#x[@]}",
        "read -r line < input.txt",
        "export NAME=value",
        "git commit -m '(((((((((((((('",
        "echo '````````````````````````````````````````````````'",
    ] {
        understood(s);
    }
}

#[test]
fn huge_simple_inputs_are_parsed() {
    // Identical commands are one subject.
    let big = "echo a; ".repeat(100_000);
    let subjects = extract(&big);
    assert_eq!(subjects.commands.len(), 1);
    assert!(subjects.commands.iter().all(|c| c.opaque.is_none()));
    // Past 4096 distinct commands the line is opaque, with the commands met so far listed.
    let distinct: String = (0..80_000).map(|i| format!("echo a{i}; ")).collect();
    let subjects = extract(&distinct);
    assert_eq!(subjects.commands.len(), 4097);
    assert!(subjects.commands[4096].opaque.is_some());
    let fewer: String = (0..4_000).map(|i| format!("echo a{i}; ")).collect();
    understood(&fewer);
    let word = format!("echo {}", "a".repeat(1_000_000));
    understood(&word);
}

// ---- outside the subset: the whole line is unparsed ----

#[test]
fn syntax_outside_the_subset_is_unparsed() {
    for s in [
        "git status; )",
        "echo $(rm x",
        "echo $[1+1]",
        "coproc rm x",
        "select x in a; do rm x; done",
        "echo @(a|b)",
        "echo `echo \\`rm x\\``",
        "cat <<EOF\nno end",
        "cat <<EOF; echo \"a\nb\"\nEOF",
        "echo ((",
        "f() echo hi",
        "echo a;; echo b",
        "in",
        "echo a<(b)",
        "{x}>f echo",
        "echo \"${x:-'a'}\"",
        "((1 + 'a'))",
        "cat <<EOF\nEOF)\nEOF",
        // bash 5.2 rejects an escaped metacharacter in an array inside `$( )` (and runs the
        // lines after the error).
        "echo $( (y=(victim \\;)) )\n$(rm x)",
        "echo $(y=(a \\|))",
        "cat <(declare y=(a\\ b))",
    ] {
        unparsed(s);
    }
    // Outside a substitution, and escapes bash keeps, are fine.
    understood("y=(a \\;); echo $(y=(a \\$ \\*))");
}

#[test]
fn hostile_nesting_is_an_error_not_a_crash() {
    for s in [
        "(".repeat(10_000),
        "$(".repeat(10_000),
        "\"$(".repeat(5_000),
        "${x:-".repeat(10_000),
        format!("{}x{}", "{ ".repeat(5_000), "; }".repeat(5_000)),
        "bash -c '".repeat(2_000),
    ] {
        let subjects = extract(&s);
        assert!(
            subjects.commands.iter().any(|c| c.opaque.is_some()),
            "{:?}",
            &s[..20]
        );
    }
}

/// brush-parser took ~25 s on this; the engine reads it in linear time.
#[test]
fn the_backtracking_input_is_read_at_once() {
    let s = "echo \"${M[}\"${M[}\"${M[}\"${M[}\"${M[}\"${M[}".repeat(20);
    let _ = extract(&s);
}

// ---- the walk ----

#[test]
fn nested_subshells_written_as_double_parens_keep_their_commands() {
    let s = extract("echo hi; ((rm -rf victim) )");
    assert!(s.commands.iter().any(|c| c.text == "rm -rf victim"));
    assert!(s.commands.iter().any(|c| c.opaque.is_some()));
    let s = extract("echo $((rm -rf victim) )");
    assert!(s.commands.iter().any(|c| c.text == "rm -rf victim"));
}

#[test]
fn redirections_are_subjects() {
    assert_eq!(
        writes("echo x > a 2>> b &> c >| d"),
        [
            ("a".into(), false),
            ("b".into(), false),
            ("c".into(), false),
            ("d".into(), false)
        ]
    );
    assert_eq!(writes("echo x 2>&1 >&- > /dev/null"), []);
    assert_eq!(writes("echo x >&out"), [("out".into(), false)]);
    assert_eq!(writes("echo x > $F"), [("$F".into(), true)]);
    assert_eq!(
        writes("echo x | tee a -a b"),
        [("a".into(), false), ("b".into(), false)]
    );
    let reads: Vec<String> = extract("sort < in.txt")
        .redirects
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(reads, ["in.txt"]);
}

#[test]
fn redirections_after_a_path_changing_command_are_opaque() {
    // `ln` writes `notes` itself, or `notes/.env` when `notes` is a folder (subjects resolved
    // now), then the redirection is opaque.
    assert_eq!(
        writes("ln -sf .env notes; echo x > notes"),
        [
            ("notes".into(), false),
            ("notes/.env".into(), false),
            ("notes".into(), true)
        ]
    );
    assert_eq!(writes("cd secrets && echo x > key"), [("key".into(), true)]);
    assert_eq!(writes("mkdir -p d && echo x > d/f"), [("d/f".into(), true)]);
    assert_eq!(writes("echo x > before; cd d"), [("before".into(), false)]);
    // git's reading subcommands change nothing; the others may rewrite the work tree.
    assert_eq!(
        writes("git status && echo x > out"),
        [("out".into(), false)]
    );
    assert_eq!(
        writes("git checkout b && echo x > out"),
        [("out".into(), true)]
    );
    // A background job or a loop may open its files after the line changed paths.
    assert_eq!(
        writes("(sleep 1; echo x > f) & ln -s .env f"),
        [
            ("f".into(), true),
            ("f".into(), false),
            ("f/.env".into(), false)
        ]
    );
    assert_eq!(
        writes("for i in 1 2; do echo x > f; ln -sf .env f; done"),
        [
            ("f".into(), true),
            ("f".into(), true),
            ("f/.env".into(), true)
        ]
    );
    // A command substitution runs before the redirection is opened.
    assert_eq!(
        writes("echo $(ln -s .env f) > f"),
        [
            ("f".into(), false),
            ("f/.env".into(), false),
            ("f".into(), true)
        ]
    );
}

#[test]
fn variables_the_line_sets_are_chosen_by_the_model() {
    // Unknown programs: a computed argument may be the command they run.
    opaque("X=rm; taskset 1 $X -rf victim");
    opaque("for c in rm; do taskset 1 $c -rf victim; done");
    opaque("taskset 1 $(echo rm) -rf victim");
    opaque("f() { taskset 1 \"$@\"; }; f rm -rf victim");
    // Variables from the pod's environment are not.
    understood("echo $HOME; cat $PWD_FILE");
    understood("taskset 1 make $JOBS");
    // Arithmetic on a variable the line sets evaluates it.
    opaque("x='a[$(rm x)]'; echo $((x))");
    opaque("x=1; [[ $x -eq 0 ]]");
    understood("echo $((COLUMNS / 2))");
}

#[test]
fn deny_forms_cover_unknown_wrappers() {
    let c = find("taskset 1 rm -rf victim", "taskset 1 rm -rf victim");
    let suffixes: Vec<&str> = c.also_from.iter().map(|&o| &c.text[o..]).collect();
    assert_eq!(suffixes, ["1 rm -rf victim", "rm -rf victim", "victim"]);
    // A data program's arguments are not commands.
    assert!(find("echo rm -rf x", "echo rm -rf x").also_from.is_empty());
    // An argument that reads as a command line is a guess.
    let s = extract("mytool --run 'rm -rf victim'");
    assert!(s
        .commands
        .iter()
        .any(|c| c.guess && c.text == "rm -rf victim"));
    let s = extract("grep 'rm -rf' notes.txt");
    assert!(s.commands.iter().all(|c| !c.guess));
}

#[test]
fn wrappers_are_unwrapped() {
    for s in [
        "sudo -u root rm x",
        "sudo VAR=1 rm x",
        "env -i A=1 rm x",
        "env -u HOME rm x",
        "timeout -s KILL 5 rm x",
        "nice -n 5 rm x",
        "nice -5 rm x",
        "nohup rm x",
        "command rm x",
        "exec rm x",
        "builtin rm x",
        "stdbuf -oL rm x",
        "setsid -f rm x",
        "ionice -c 3 rm x",
        "time -p rm x",
        "xargs -0 -n 1 rm x",
        "xargs --eof rm x",
        "flock /tmp/l rm x",
        "chrt 1 rm x",
        "taskset -c 1 rm x",
        "busybox nohup rm x",
        "watch -n 1 rm x",
        "bash -c 'rm x'",
        "sh -ec 'rm x'",
        "bash -o pipefail -c 'rm x'",
        "su -c 'rm x' root",
        "script -qc 'rm x' /dev/null",
        "flock f -c 'rm x'",
        "sg staff 'rm x'",
        "find . -name '*.o' -exec rm x {} \\;",
        "fd -e o -x rm x",
    ] {
        let found = extract(s)
            .commands
            .iter()
            .any(|c| c.text.ends_with("rm x") || c.text == "rm x {}");
        assert!(found, "{s:?}: {:#?}", extract(s).commands);
    }
    // `command -v` looks a name up; it runs nothing.
    assert_eq!(texts("command -v rm"), ["command -v rm"]);
}

// ---- the program table: one row per code-running form ----

#[test]
fn code_running_arguments_are_opaque() {
    for s in [
        "find . -exec rm {} \\;",
        "find . -execdir rm {} +",
        "find . -ok rm {} \\;",
        "find . -okdir rm {} \\;",
        "find . -delete",
        "find . -fprint /tmp/x",
        "find . -fprint0 /tmp/x",
        "find . -fprintf /tmp/x %p",
        "find . -fls /tmp/x",
        "sed -n '1e rm x' f",
        "sed 's/a/b/e' f",
        "sed 's/a/b/w out' f",
        "sed -n 'w out' f",
        "sed '1W out' f",
        "sed -i 's/a/b/' f",
        "sed --in-place=.bak 's/a/b/' f",
        "sed -f script.sed f",
        "awk 'BEGIN{system(\"rm x\")}'",
        "awk '{print | \"sh\"}'",
        "awk '{print > \"/tmp/x\"}'",
        "awk -f prog.awk",
        "gawk -l ext 1",
        "echo a | xargs -I{} sh -c 'rm {}'",
        "echo a | xargs find",
        "echo a | xargs git",
        "tar -cf x.tar --to-command='rm x' .",
        "tar --checkpoint-action=exec=x -cf a .",
        "tar --use-compress-program=x -cf a .",
        "tar -I x -cf a .",
        "tar cIf x a .",
        "make --eval='x'",
        "make -f other.mk",
        "make CC='rm x'",
        "git -c alias.x='!rm' x",
        "git --config-env=core.pager=X log",
        "git --exec-path=/tmp log",
        "git rebase -x 'rm x' main",
        "git rebase -i main",
        "git bisect run rm x",
        "git submodule foreach 'rm x'",
        "git difftool -x rm",
        "git fetch --upload-pack='rm x' .",
        "git config alias.x '!rm x'",
        "git config core.pager 'rm x'",
        "less +'!rm x' f",
        "LESSOPEN='|rm x %s' less f",
        "man -P 'rm x' ls",
        "vim -c ':!rm x'",
        "ex -s f",
        "sqlite3 :memory: '.shell rm x'",
        "sqlite3 db 'select load_extension(1)'",
        "sqlite3 db",
        "gdb -ex 'shell rm x'",
        "python3 -c 'x'",
        "python3 -m timeit x",
        "python3",
        "python3 -",
        "perl -e 1",
        "perl -pi -e s/a/b/ f",
        "perl '-Mstrict;qx{rm}'",
        "node -e 1",
        "node --require ./x.js app.js",
        "node --import data:x app.js",
        "ruby -e 1",
        "php -r 1",
        "lua -e 1",
        "bash",
        "bash -s",
        "bash /dev/stdin",
        "bash /proc/self/fd/0",
        // The kernel reads each of these as stdin (an oracle fuzz finding: `bash //dev/stdin`).
        "bash //dev/stdin",
        "bash /./dev/stdin",
        "bash ../../../../dev/stdin",
        "sh //dev/stdin",
        "source //dev/stdin",
        "python3 //dev/stdin",
        "cd /dev; bash stdin",
        "cd /proc/self/fd && bash 0",
        "cd /proc/self && bash fd/0",
        "env -C /dev bash stdin",
        "source /dev/stdin",
        ". <(echo x)",
        "zsh -c 'rm x'",
        "eval 'rm x'",
        "trap 'rm x' EXIT",
        "let x=1",
        "cargo --config 'target.x.runner=\"rm\"' run",
        "rsync -e 'rm x' a b",
        "ssh -o ProxyCommand='rm x' host",
        "sort --compress-program=rm f",
        "rg --pre rm x",
        "env -S 'rm x'",
        "set -k",
        "shopt -s extglob",
        "alias ls='rm x'",
        "hash -p /bin/rm ls",
        "declare -n r=x",
        "local -i n",
        "read 'a[$(rm x)]'",
        "printf -v 'a[1+x]' y",
        "unset 'a[x]'",
        "mapfile -C f x",
        "test -v 'a[x]'",
        "[ -v \"$n\" ]",
        "echo ${x@P}",
        "echo ${!x}",
        "echo ${a[i]}",
        "echo ${s:x}",
    ] {
        opaque(s);
    }
}

#[test]
fn everyday_forms_of_those_programs_stay_understood() {
    for s in [
        "find . -name '*.rs' -type f",
        "find src -newer x -print0",
        "sed -n '1,5p' f",
        "sed 's/a/b/g; s|/|x|' f",
        "sed -e 's/[/]b/x/' -e '/^#/d' f",
        "sed '/start/,/end/{s/a/b/;p}' f",
        "sed 'y/abc/xyz/' f",
        "sed '$a\\\nend' f",
        "awk '{print $1}' f",
        "awk -F: '$3 > 100' /etc/passwd",
        "awk -v n=1 'NR==n' f",
        "tar -czf out.tgz src",
        "tar xzf out.tgz",
        "make -j4 test",
        "git status --short",
        "git -C sub log --oneline -5",
        "git --no-pager diff HEAD~1",
        "git config user.name 'A B'",
        "git rebase main",
        "less f",
        "man ls",
        "sqlite3 db 'select 1'",
        "python3 script.py --flag",
        "python3 -u -X dev script.py",
        "node app.js",
        "perl script.pl",
        "bash script.sh arg",
        "source venv/bin/activate",
        "cargo build --release",
        "npm test",
        "sort -u f",
        "rg -n 'fn main' src",
        "set -e",
        "shopt -s nullglob",
        "declare -a arr=(1 2)",
        "local x=1",
        "read -r a b",
        "printf -v out '%s' x",
        "unset x",
        "test -v HOME",
        "[[ -v HOME ]]",
        "echo ${a[1]} ${s:1:2}",
    ] {
        understood(s);
    }
}

#[test]
fn sed_scripts() {
    use super::programs::sed_script_runs;
    for fine in [
        "s/a/b/g",
        "1,5d",
        "/x/!d",
        "s|a|b|2",
        "s/[[:alpha:]/]/X/g",
        "s/\\(b\\)/\\1\\/e/",
        "$!N;P;D",
        "a hello",
        "1~2p",
        "0,/x/s//y/",
        ":a;N;ba",
        "y/ab/cd/",
        "#n\np",
    ] {
        assert_eq!(sed_script_runs(fine), None, "{fine:?}");
    }
    for runs in [
        "e rm x",
        "1e rm x",
        "s/a/b/e",
        "s/a/b/gw out",
        "w out",
        "/x/W out",
        "s/a/b/;e",
        "{e\n}",
        "s/[/]e/x/e",
        "Z",
    ] {
        assert!(sed_script_runs(runs).is_some(), "{runs:?}");
    }
}

#[test]
fn a_static_prefix_is_what_an_option_check_sees() {
    let w = literal_word("--exec");
    assert!(w.may_start_dash && w.is_static);
}

/// A line is walked item by item; an item walked as if a name were not assigned, which a later
/// item assigns, sends the line back for a walk of the whole.
#[test]
fn a_later_assignment_sends_the_line_back_for_a_whole_walk() {
    opaque("echo $((x)); x='a[$(rm -rf victim)]'");
    opaque("(sleep 1; echo $((x))) & x='a[$(rm -rf victim)]'; wait");
    opaque("f() { echo $((n)); }; n='a[$(rm x)]'; f");
    opaque("taskset 1 $X -rf victim; X=rm");
    understood("echo $((COLUMNS + 1)); n=5");
}

/// Walking item by item gives what walking the whole line gives.
#[test]
fn the_item_by_item_walk_agrees_with_the_whole_walk() {
    for s in [
        "git status && rm -rf build; echo $(ls) > out",
        "x=5; echo $((x + 1)); for i in 1 2; do echo $i; done",
        "cd d && echo x > f; ln -s a b; cat <<EOF\n$(rm x)\nEOF\necho done",
        "a=(1 2); echo ${a[1]} & wait; [[ -f x ]] || touch x",
        "bash -c 'y=1; echo $y'; echo $y",
    ] {
        let budget = parse::Budget::for_input(s.len());
        let streamed = super::streamed(s, &budget).expect("parses");
        let whole = super::whole(s, &budget).expect("parses");
        assert_eq!(streamed.as_ref(), Some(&whole), "{s:?}");
    }
}

// ---- issue 26: the classes where the engine read a line otherwise than bash ----

/// A: a here-document whose command ends at `;` or `&` has its body after the newline: it is
/// read before the command is walked.
#[test]
fn a_here_document_body_after_a_separator_is_walked() {
    for s in [
        "git status <<EOF; git status\n$(rm -rf victim)\nEOF",
        "git status <<EOF & git status\n$(rm -rf victim)\nEOF",
        "cat <<A; cat <<B & echo\n$(rm -rf victim)\nA\nB",
        "cat <<A; cat <<B & echo\nA\n$(rm -rf victim)\nB",
    ] {
        find(s, "rm -rf victim");
    }
    // The item by item walk and the whole walk agree on it.
    let s = "git status <<EOF; echo a\n$(rm x)\nEOF\necho b";
    let budget = parse::Budget::for_input(s.len());
    let streamed = super::streamed(s, &budget).expect("parses");
    let whole = super::whole(s, &budget).expect("parses");
    assert_eq!(streamed.as_ref(), Some(&whole));
}

/// B: `<(...)` is a word in `[[ ]]`, and a process substitution anywhere in an unquoted
/// `${x:-...}` runs.
#[test]
fn b_process_substitution_in_conditions_and_parameter_words() {
    for s in [
        "[[ -n <(rm -rf victim) ]]",
        "[[ x < <(rm -rf victim) ]]",
        "[[ >(rm -rf victim) == x ]]",
        "git log ${x:-<(rm -rf victim)}",
        "git log ${x:-a<(rm -rf victim)}",
        "echo ${x:+<(rm -rf victim)}",
        "echo ${x/a/<(rm -rf victim)}",
        "echo ${x#<(rm -rf victim)}",
        "echo ${x/<(rm -rf victim)/y}",
    ] {
        find(s, "rm -rf victim");
    }
    // Inside double quotes it is text, as bash reads it.
    assert_eq!(
        texts("echo \"${x:-<(rm -rf victim)}\""),
        ["echo \"${x:-<(rm -rf victim)}\""]
    );
    // sh does not know it.
    opaque("sh -c 'cat <(rm -rf victim)'");
}

/// C: `${x:-TEXT}` may be the model's TEXT even when `x` comes from pod's environment.
#[test]
fn c_a_parameter_default_is_the_models_text() {
    for s in [
        "find . -maxdepth 0 ${x:--exec rm -rf victim ;}",
        "find . ${x--delete}",
        "find . ${x:=-delete}",
        "find . ${HOME:+-delete}",
        "find . ${HOME/*/-delete}",
        "git log ${x:--p}",
    ] {
        opaque(s);
    }
    // The variable's own value, trimmed or with its case changed, is still pod's.
    understood("find . ${HOME#/}");
    understood("find . ${HOME%/} -name x");
    understood("find . ${X:-$HOME}");
}

/// D: an option's value that brace expansion, splitting or a glob can make several words (or
/// none) moves the words after it.
#[test]
fn d_an_option_value_that_may_be_several_words() {
    for s in [
        "git -C {.,push,origin} main",
        "git -C {.,-c,core.fsmonitor=rm\\ -rf\\ victim} status",
        "d='. push'; git -C $d main",
        "git -C * status",
        "git -C $DIR status",
        "git --git-dir {a,b} status",
        "sort -o {a,b.env} x",
        "timeout {1,rm} -rf victim",
        "python3 -W {a,-c} x.py",
        "sqlite3 -separator {x,-cmd,'.shell rm x'} db 'select 1'",
    ] {
        opaque(s);
    }
    understood("git -C \"$DIR\" status");
    understood("git -C sub log --oneline");
}

/// E: where awks read `/` differently, every reading is checked.
#[test]
fn e_awk_slash_and_bracket_readings() {
    use super::programs::awk_program_runs;
    for runs in [
        "BEGIN { length /#/; system(\"rm x\") }",
        "BEGIN { x = length /2; system(\"rm x\") #/ }",
        "BEGIN { a = 1; b = a++ /2; system(\"rm x\") #/ }",
        "BEGIN { getline /2; system(\"rm x\") #/ }",
        "BEGIN { x = \"a\" ~ /[]/]#/; system(\"rm x\") }",
        "BEGIN { x = \"a\" ~ /[^]/]#/; system(\"rm x\") }",
        "BEGIN { x = \"a\" ~ /[[:alpha:]/]#/; system(\"rm x\") }",
        "BEGIN { x = \"a\" ~ /[/]#/; system(\"rm x\") }",
        "BEGIN { x = 1 \\\n/2; system(\"rm x\") #/\n}",
    ] {
        assert!(awk_program_runs(runs).is_some(), "{runs:?}");
    }
    for fine in [
        "{ print length / 2 }",
        "{ print length($0) / 2 }",
        "/[0-9]+\\/[0-9]+/ { print }",
        "/[a-z]/ && /[0-9]/ && /[A-Z]/ && /[_]/ && /[.]/ && /[,]/ && /[;]/ && /[:]/ { n++ } END { print n / 2 }",
        "{ n++ } END { print n }",
        "{ print $1 / 2 }",
        "/n|m/",
    ] {
        assert_eq!(awk_program_runs(fine), None, "{fine:?}");
    }
}

/// F: an interpreter option the table does not know has an unknown arity: opaque.
#[test]
fn f_interpreter_options_outside_the_table() {
    for s in [
        "node -C x -e 1",
        "node --title x -e 1",
        "node --frobnicate x app.js",
        "python3 --check-hash-based-pycs never -c 1",
        "python3 -J x script.py",
        "perl -Ilib -e 1",
        "perl -Z script.pl",
        "perl -lMstrict script.pl",
        "ruby -C dir -e 1",
        "php -f x.php -r 1",
        "lua -v -e 1",
        "julia --eval 1",
        "R -f x.R",
    ] {
        opaque(s);
    }
    for s in [
        "node app.js",
        "node --no-warnings --title x app.js",
        "node --max-old-space-size=4096 build.js",
        "python3 -u -X dev script.py",
        "python3 -W ignore script.py arg",
        "perl -I lib -w script.pl",
        "perl -l -n script.pl",
        "python3 --check-hash-based-pycs never script.py",
    ] {
        understood(s);
    }
}

/// G: a program given `-c` twice runs one of them, which depends on the program: both are
/// walked.
#[test]
fn g_every_value_of_a_repeated_option_is_walked() {
    find(
        "script -q -c true -c 'rm -rf victim' /dev/null",
        "rm -rf victim",
    );
    find(
        "script -q -c 'rm -rf victim' -c true /dev/null",
        "rm -rf victim",
    );
    find("su -c true --command='rm -rf victim' root", "rm -rf victim");
    opaque("env -C a -C b rm x");
    opaque("xargs -I A -I B rm A B");
}

/// H, I, J: programs that run programs, found under their other names.
#[test]
fn h_i_j_programs_that_run_programs() {
    for (s, inner) in [
        ("setarch x86_64 /bin/rm -rf victim", "rm -rf victim"),
        ("setarch x86_64 -R rm -rf victim", "rm -rf victim"),
        ("linux64 rm -rf victim", "rm -rf victim"),
        ("busybox rm -rf victim", "rm -rf victim"),
        ("busybox sh -c 'rm -rf victim'", "rm -rf victim"),
        (
            "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf victim",
            "rm -rf victim",
        ),
        ("ld.so --argv0 x /bin/rm -rf victim", "rm -rf victim"),
        ("time -- /bin/rm -rf victim", "rm -rf victim"),
        ("time -p -- rm -rf victim", "rm -rf victim"),
        ("jobs -x rm -rf victim", "rm -rf victim"),
        ("jobs -lx rm -rf victim", "rm -rf victim"),
        (
            "/usr/lib/git-core/git-push origin HEAD",
            "git push origin HEAD",
        ),
        ("git-push origin HEAD", "git push origin HEAD"),
    ] {
        find(s, inner);
    }
    opaque("/lib64/ld-linux-x86-64.so.2 --preload x.so /bin/ls");
    opaque("go test -exec 'sh -c \"rm -rf victim\"' ./...");
    opaque("go test -exec=sh ./...");
    opaque("go build -toolexec=/tmp/x ./...");
    opaque("go env -w GOFLAGS=-toolexec=x");
    opaque("GOFLAGS=-toolexec=x go test ./...");
    opaque("mytool --exec 'rm -rf victim'");
    opaque("mytool --run-command=x");
    understood("go test ./...");
    understood("go test -run 'TestA|TestB' -v ./...");
    understood("busybox --list");
    // `git send-pack` pushes: a deny rule for `git push` is tried on it.
    let s = extract("git send-pack remote.git main");
    assert!(s
        .commands
        .iter()
        .any(|c| c.guess && c.text == "git push remote.git main"));
}

/// K: the files programs write, as bash and the program see them.
#[test]
fn k_files_programs_write() {
    let paths = |s: &str| -> Vec<String> { writes(s).into_iter().map(|(p, _)| p).collect() };
    assert_eq!(paths("cp key secrets"), ["secrets", "secrets/key"]);
    assert_eq!(paths("cp -T key secrets"), ["secrets"]);
    assert_eq!(paths("mv a/b/key secrets/"), ["secrets/", "secrets/key"]);
    assert_eq!(
        paths("cp -t secrets a b"),
        ["secrets", "secrets/a", "secrets/b"]
    );
    assert_eq!(
        paths("cp --target-directory=secrets a"),
        ["secrets", "secrets/a"]
    );
    assert_eq!(paths("ln -s /etc/x"), ["./x"]);
    assert_eq!(paths("sort -o.env k"), [".env"]);
    assert_eq!(paths("sort --output=.env k"), [".env"]);
    assert_eq!(paths("shuf -o .env k"), [".env"]);
    assert_eq!(paths("uniq k .env"), [".env"]);
    assert_eq!(paths("dd if=k of=secrets/key"), ["secrets/key"]);
    assert_eq!(paths("echo x | env -C secrets tee key"), ["secrets/key"]);
    assert_eq!(
        paths("env --chdir=secrets cp a b"),
        ["secrets/b", "secrets/b/a"]
    );
    assert_eq!(
        paths("env -C a env -C b bash -c 'echo x > key'"),
        ["a/b/key"]
    );
    assert_eq!(paths("git show --output=pod.toml"), ["pod.toml"]);
    assert_eq!(paths("git diff --output .env"), [".env"]);
    assert_eq!(paths("git -C sub diff --output=.env"), ["sub/.env"]);
    assert_eq!(
        writes("env -C \"$(echo d)\" tee key"),
        [("key".into(), true)]
    );
    opaque("git diff --outp=x");
    opaque("git format-patch -o out HEAD~1");
}

/// The false asks of the issue: what a rule can name is understood.
#[test]
fn commands_that_rules_can_name() {
    // xargs is a wrapper: its command is a subject; what it reads is the model's.
    let s = extract("find . -name '*.py' | xargs grep -n print");
    assert!(s.commands.iter().all(|c| c.opaque.is_none()), "{s:#?}");
    find("find . -name '*.py' | xargs grep -n print", "grep -n print");
    find("xargs -0 rm", "rm");
    understood("xargs --version");
    opaque("xargs -I{} sh -c 'echo {}'");
    opaque("xargs find");
    opaque("xargs --process-slot-var=BASH_ENV bash x");
    // A glob no expansion of which is a find action.
    understood("find . -name *.py");
    understood("find src -name *.rs -o -name *.toml");
    opaque("find . -name *");
    opaque("find . -name -de*");
    // `$(git merge-base ...)` prints object names.
    understood("git diff $(git merge-base main HEAD)");
    understood("git diff \"$(git rev-parse --verify HEAD)\" -- src");
    opaque("git diff $(git log -1 --format=%s)");
    opaque("git diff $(git rev-parse --abbrev-ref HEAD)");
    opaque("git diff $(git merge-base main HEAD > x)");
    // python3 -m MODULE: opaque, naming the module.
    let c = find("python3 -m pytest -q", "python3 -m pytest -q");
    assert!(c.opaque.is_some());
    assert_eq!(c.named, Some("python3 -m pytest".len()));
    assert_eq!(
        find("python3 -I -m pytest", "python3 -I -m pytest").named,
        Some(20)
    );
    assert_eq!(
        find("python3 -c 'print(1)' x", "python3 -c print(1) x").named,
        Some("python3 -c print(1)".len())
    );
    assert_eq!(find("python3 -i x.py", "python3 -i x.py").named, None);
}
