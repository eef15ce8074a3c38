//! What one exec is, read at its exec stop: its argv and program from `/proc`, and the other
//! names of the run that deny and ask rules also apply to (a renamed or copied binary, a
//! busybox applet, what the dynamic loader runs, `git-push` as `git push`), a copy known by its
//! content ([`Identities`]).
//!
//! Must not touch: deciding (the judge), the process itself (it only reads `/proc`).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::supervisor::Tracee;
use super::{basename, Exec};

/// Reads one exec from `/proc` at its exec stop.
pub(super) fn read_exec(pid: i32, before: &Tracee, ids: Option<&Identities>) -> Option<Exec> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut argv: Vec<String> = raw
        .split(|b| *b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if raw.ends_with(&[0]) {
        argv.pop();
    }
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let exe_base = basename(&exe.to_string_lossy());
    if argv.is_empty() {
        argv.push(exe_base.clone());
    }
    let identity = ids.and_then(|ids| {
        let file = File::open(format!("/proc/{pid}/exe")).ok()?;
        ids.name_of(&file)
    });
    let mut aliases = aliases(&argv, &exe_base, identity.as_deref());
    if is_loader(&exe_base) {
        for alias in loaded(pid, &argv, ids) {
            if alias != argv && !aliases.contains(&alias) {
                aliases.push(alias);
            }
        }
    }
    Some(Exec {
        argv,
        exe,
        role: before.role,
        by: before.image.clone(),
        aliases,
    })
}

/// Whether `exe_base` names the dynamic loader.
fn is_loader(exe_base: &str) -> bool {
    exe_base.starts_with("ld-linux")
        || exe_base.starts_with("ld.so")
        || exe_base.starts_with("ld-musl")
        || exe_base.starts_with("ld64.so")
}

/// What the loader of `pid` may run, by what the file is rather than what its path says: each
/// argument that is not an option, opened as the process sees it (`/proc/PID/cwd`, `root`),
/// named by its real path's last part and by its content ([`Identities`]); so `ld.so ./zz`
/// with `zz` a link to (or a copy of) `rm` is `rm`.
fn loaded(pid: i32, argv: &[String], ids: Option<&Identities>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let rest = argv.get(1..).unwrap_or(&[]);
    for (i, word) in rest.iter().enumerate().take(16) {
        if word.starts_with('-') || word.is_empty() {
            continue;
        }
        // The process's own descriptors and /proc entries are its, not the pod's.
        let own = ["/proc/self/", "/proc/thread-self/", "/dev/fd/"]
            .iter()
            .find_map(|p| word.strip_prefix(p).map(|rest| (*p, rest)));
        let path = if let Some((prefix, rest)) = own {
            if prefix == "/dev/fd/" {
                format!("/proc/{pid}/fd/{rest}")
            } else {
                format!("/proc/{pid}/{rest}")
            }
        } else if word.starts_with('/') {
            format!("/proc/{pid}/root{word}")
        } else {
            format!("/proc/{pid}/cwd/{word}")
        };
        let Ok(file) = File::open(&path) else {
            continue;
        };
        let after = rest.get(i + 1..).unwrap_or(&[]);
        let mut named = |name: String| {
            let mut words = vec![name];
            words.extend_from_slice(after);
            if !out.contains(&words) {
                out.push(words);
            }
        };
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            named(basename(&real.to_string_lossy()));
        }
        if let Some(id) = ids.and_then(|ids| ids.name_of(&file)) {
            named(id);
        }
    }
    out
}

/// The other argvs of one run (see [`Exec::aliases`]).
fn aliases(argv: &[String], exe_base: &str, identity: Option<&str>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let arg0 = basename(argv.first().map_or("", String::as_str));
    let rest = argv.get(1..).unwrap_or(&[]);
    let mut push = |words: Vec<String>| {
        if !words.is_empty() && words.as_slice() != argv && !out.contains(&words) {
            out.push(words);
        }
    };
    let named = |name: &str| {
        let mut words = vec![name.to_string()];
        words.extend_from_slice(rest);
        words
    };
    // A renamed binary or a hard link runs what it is.
    if exe_base != arg0 {
        push(named(exe_base));
    }
    if let Some(id) = identity.filter(|id| *id != arg0) {
        push(named(id));
    }
    let is = |name: &str| exe_base == name || identity == Some(name);
    // busybox runs the applet named by argv[0], or by argv[1] when argv[0] is busybox.
    if is("busybox") && arg0 == "busybox" {
        push(rest.to_vec());
    }
    // The dynamic loader runs the program named by its first argument that is not an option
    // (every later argument is tried too: its options may take values).
    if is_loader(exe_base) {
        for (i, word) in rest.iter().enumerate().take(16) {
            if !word.starts_with('-') {
                push(rest[i..].to_vec());
            }
        }
    }
    // git runs `git-push` (git-core) as `git push`.
    if is("git") {
        if let Some(sub) = arg0.strip_prefix("git-").filter(|s| !s.is_empty()) {
            let mut words = vec!["git".to_string(), sub.to_string()];
            words.extend_from_slice(rest);
            push(words);
        }
    }
    out
}

/// Programs known by their content: the ones deny and ask rules name, as found in the
/// standard folders of programs, so a copy of `rm` under another name is still `rm`.
#[derive(Debug, Default)]
pub struct Identities {
    known: Vec<Known>,
}

#[derive(Debug)]
struct Known {
    name: String,
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    hash: OnceLock<Option<Vec<u8>>>,
}

/// Where programs are looked up for [`Identities`].
const BIN_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

impl Identities {
    /// The identities of `names` (program names; paths and patterns are skipped).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Identities {
        let mut known: Vec<Known> = Vec::new();
        for name in names {
            if name.is_empty() || name.contains(['/', '*', '?', '[']) {
                continue;
            }
            for dir in BIN_DIRS {
                let path = Path::new(dir).join(name);
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if !meta.is_file()
                    || known
                        .iter()
                        .any(|k| k.dev == meta.dev() && k.ino == meta.ino())
                {
                    continue;
                }
                known.push(Known {
                    name: name.to_string(),
                    path,
                    dev: meta.dev(),
                    ino: meta.ino(),
                    size: meta.size(),
                    hash: OnceLock::new(),
                });
            }
        }
        Identities { known }
    }

    /// The known program `file` is: the same file (a hard link), or a copy of one (same size,
    /// same SHA-256).
    fn name_of(&self, file: &File) -> Option<String> {
        let meta = file.metadata().ok()?;
        if let Some(k) = self
            .known
            .iter()
            .find(|k| k.dev == meta.dev() && k.ino == meta.ino())
        {
            return Some(k.name.clone());
        }
        let same_size: Vec<&Known> = self
            .known
            .iter()
            .filter(|k| k.size == meta.size())
            .collect();
        if same_size.is_empty() {
            return None;
        }
        let mine = hash_file(file)?;
        same_size
            .into_iter()
            .find(|k| {
                k.hash
                    .get_or_init(|| File::open(&k.path).ok().and_then(|f| hash_file(&f)))
                    .as_deref()
                    == Some(mine.as_slice())
            })
            .map(|k| k.name.clone())
    }
}

/// SHA-256 of a file's content (at most 256 MiB).
fn hash_file(file: &File) -> Option<Vec<u8>> {
    use sha2::Digest;
    use std::io::Read;
    let mut hasher = sha2::Sha256::new();
    let mut reader = io::BufReader::new(file).take(256 << 20);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Some(hasher.finalize().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn aliases_name_what_the_program_is() {
        assert_eq!(
            aliases(&words("myrm -rf v"), "rm", None),
            [words("rm -rf v")]
        );
        assert_eq!(
            aliases(&words("./x -rf v"), "x", Some("rm")),
            [words("rm -rf v")]
        );
        assert_eq!(
            aliases(&words("busybox rm -rf v"), "busybox", None),
            [words("rm -rf v")]
        );
        assert_eq!(
            aliases(
                &words("/lib64/ld-linux-x86-64.so.2 /bin/rm -rf v"),
                "ld-linux-x86-64.so.2",
                None
            ),
            [words("/bin/rm -rf v"), words("v")]
        );
        assert_eq!(
            aliases(&words("/usr/lib/git-core/git-push origin"), "git", None),
            [words("git origin"), words("git push origin")]
        );
        assert!(aliases(&words("rm -rf v"), "rm", Some("rm")).is_empty());
    }
}
