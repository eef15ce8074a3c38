//! What the writable folders hold that matters to git, kept between calls so that the check at
//! each call's end ([`super::repos`]) lists again only the folders that changed.
//!
//! One breadth-first walk of each root (shallow folders first, so what lies near a root is seen
//! whatever the budget), at most [`super::WALK_BUDGET`] entries each, no symlink followed, no
//! `.git` entered, finds every `.git` (folder, file or link), every folder that holds what
//! git's test for a repository folder looks at (`HEAD` with `objects` and `refs`, whatever
//! they are, or with `commondir`), and every other symlink (where it leads is for the check to
//! follow). A folder listed once is listed again only when it may have changed:
//!
//! - **watched** (inotify, added before the folder is listed): no event since, and its parent's
//!   listing still names the same inode at its path. Nothing is asked of the kernel for it;
//! - **otherwise** (no inotify instance or watch to be had, the queue overflowed): its change
//!   time, inode and device are what they were at its listing (creating, removing or renaming an
//!   entry changes a folder's change time, which no call can set back; a change time less than
//!   2 s old is never trusted, since the kernel stamps with a coarse clock).
//!
//! What is read from inside entries (a `HEAD`, a `.git` file, a config) is not kept: the check
//! reads it again every time.
//!
//! Owns: the kept listings, the inotify instance and its watches (closed with the [`Tree`]).
//! Must not touch: anything in the folders (it only lists them), decisions.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// What the last walk listed, and the watches that say what changed since.
#[derive(Debug)]
pub struct Tree {
    folders: HashMap<PathBuf, Folder>,
    watcher: Option<Watcher>,
}

/// The inotify instance: which watch is which folder.
#[derive(Debug)]
struct Watcher {
    fd: OwnedFd,
    paths: HashMap<i32, PathBuf>,
}

/// A folder's identity and change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ctime: i64,
    ctime_nsec: i64,
    ino: u64,
    dev: u64,
}

/// What a listing of a folder found.
#[derive(Debug, Default)]
struct Folder {
    /// Its inode when listed.
    ino: u64,
    /// Its change time and identity when listed; `None` when too recent to trust.
    stamp: Option<Stamp>,
    /// Its inotify watch, added before it was listed.
    wd: Option<i32>,
    entries: usize,
    /// Its folders (not `.git`, not symlinks), with their inodes as the listing gave them.
    subdirs: Vec<(OsString, u64)>,
    /// Its symlinks other than `.git` (the user may `cd` through one), with what they hold
    /// (a symlink cannot be changed, only replaced, which changes its folder).
    links: Vec<(OsString, Option<PathBuf>)>,
    /// A `.git` in it: a folder (`true`), or a file or link.
    dot_git: Option<bool>,
    /// It holds `HEAD` and `objects` and `refs`, or `HEAD` and `commondir`.
    candidate: bool,
}

/// What one walk found.
#[derive(Debug, Default)]
pub struct Inventory {
    /// `.git` folders.
    pub dot_git: Vec<PathBuf>,
    /// `.git` files and symlinks.
    pub links: Vec<PathBuf>,
    /// Other folders holding what git's test for a repository folder looks at (to be tested).
    pub candidates: Vec<PathBuf>,
    /// Symlinks other than `.git`, with what they hold: where they lead may lie where the walk
    /// does not go.
    pub symlinks: Vec<(PathBuf, Option<PathBuf>)>,
    /// The budget ran out in at least one root.
    pub truncated: bool,
    /// Folders looked at.
    pub folders: usize,
    /// Folders whose change time was asked of the kernel.
    pub stated: usize,
    /// Folders listed.
    pub listed: usize,
}

/// What inotify reports: entries created, removed or moved, the folder itself gone or moved.
fn watch_flags() -> rustix::fs::inotify::WatchFlags {
    use rustix::fs::inotify::WatchFlags as W;
    W::CREATE
        | W::DELETE
        | W::MOVED_FROM
        | W::MOVED_TO
        | W::DELETE_SELF
        | W::MOVE_SELF
        | W::ONLYDIR
        | W::DONT_FOLLOW
}

impl Tree {
    /// An empty tree, with an inotify instance where one can be had.
    pub fn new() -> Tree {
        let watcher = rustix::fs::inotify::init(
            rustix::fs::inotify::CreateFlags::CLOEXEC | rustix::fs::inotify::CreateFlags::NONBLOCK,
        )
        .map_err(|e| {
            tracing::debug!("sandbox: no inotify instance ({e}); folders are checked by time");
        })
        .ok()
        .map(|fd| Watcher {
            fd,
            paths: HashMap::new(),
        });
        Tree {
            folders: HashMap::new(),
            watcher,
        }
    }

    /// A tree that trusts change times only (tests).
    #[cfg(test)]
    fn unwatched() -> Tree {
        Tree {
            folders: HashMap::new(),
            watcher: None,
        }
    }

    /// Whether `p` is a folder the last walk listed (a real folder, reached with no symlink).
    pub fn walked(&self, p: &Path) -> bool {
        self.folders.contains_key(p)
    }

    /// Walks `roots` (module header).
    pub fn walk(&mut self, roots: &[PathBuf]) -> Inventory {
        let settled = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64 - 2)
            .unwrap_or(i64::MIN);
        self.walk_settled(roots, settled)
    }

    /// The folders inotify says changed, or `None` when it cannot say (no instance, or events
    /// were lost).
    fn changed(&mut self) -> Option<HashSet<PathBuf>> {
        let watcher = self.watcher.as_mut()?;
        let mut changed = HashSet::new();
        let mut overflow = false;
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = rustix::fs::inotify::Reader::new(&watcher.fd, &mut buf);
        loop {
            match reader.next() {
                Ok(event) => {
                    let flags = event.events();
                    if flags.contains(rustix::fs::inotify::ReadFlags::QUEUE_OVERFLOW) {
                        overflow = true;
                        continue;
                    }
                    if let Some(p) = watcher.paths.get(&event.wd()) {
                        changed.insert(p.clone());
                    }
                    if flags.contains(rustix::fs::inotify::ReadFlags::IGNORED) {
                        watcher.paths.remove(&event.wd());
                    }
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    tracing::warn!("sandbox: cannot read inotify events ({e}); checking by time");
                    overflow = true;
                    break;
                }
            }
        }
        (!overflow).then_some(changed)
    }

    /// [`Tree::walk`], trusting change times before `settled` (seconds since the epoch).
    fn walk_settled(&mut self, roots: &[PathBuf], settled: i64) -> Inventory {
        use std::os::unix::fs::MetadataExt;
        let changed = self.changed();
        let mut found = Inventory::default();
        let mut visited: HashSet<PathBuf> = HashSet::new();
        for root in roots {
            // (folder, its inode as its parent's listing gave it)
            let mut queue: VecDeque<(PathBuf, Option<u64>)> =
                VecDeque::from([(root.clone(), None)]);
            let mut seen = 0usize;
            while let Some((dir, listed_ino)) = queue.pop_front() {
                let kept = self.folders.get(&dir);
                let unchanged_by_watch = changed.as_ref().is_some_and(|c| !c.contains(&dir))
                    && kept.is_some_and(|k| k.wd.is_some() && Some(k.ino) == listed_ino);
                if !unchanged_by_watch {
                    // Watched first, then looked at: a change after the watch is an event, one
                    // before it shows in the change time or the listing.
                    let wd = self.watcher.as_mut().and_then(|w| {
                        let wd = rustix::fs::inotify::add_watch(&w.fd, &dir, watch_flags()).ok()?;
                        w.paths.insert(wd, dir.clone());
                        Some(wd)
                    });
                    found.stated += 1;
                    let Ok(meta) = dir.symlink_metadata() else {
                        continue;
                    };
                    if !meta.is_dir() {
                        continue;
                    }
                    let stamp = Stamp {
                        ctime: meta.ctime(),
                        ctime_nsec: meta.ctime_nsec(),
                        ino: meta.ino(),
                        dev: meta.dev(),
                    };
                    // A folder inotify says changed is listed whatever its change time says.
                    let dirty = changed.as_ref().is_some_and(|c| c.contains(&dir));
                    let same = self
                        .folders
                        .get(&dir)
                        .is_some_and(|k| k.stamp == Some(stamp));
                    if same && !dirty {
                        if let Some(k) = self.folders.get_mut(&dir) {
                            k.wd = wd;
                        }
                    } else {
                        found.listed += 1;
                        let mut folder = list(&dir);
                        folder.ino = stamp.ino;
                        folder.stamp = (stamp.ctime < settled).then_some(stamp);
                        folder.wd = wd;
                        self.folders.insert(dir.clone(), folder);
                    }
                }
                let Some(folder) = self.folders.get(&dir) else {
                    continue;
                };
                visited.insert(dir.clone());
                found.folders += 1;
                seen += folder.entries;
                if seen > super::WALK_BUDGET {
                    found.truncated = true;
                    break;
                }
                match folder.dot_git {
                    Some(true) => found.dot_git.push(dir.join(".git")),
                    Some(false) => found.links.push(dir.join(".git")),
                    None => {}
                }
                if folder.candidate {
                    found.candidates.push(dir.clone());
                }
                found
                    .symlinks
                    .extend(folder.links.iter().map(|(n, t)| (dir.join(n), t.clone())));
                queue.extend(
                    folder
                        .subdirs
                        .iter()
                        .map(|(n, ino)| (dir.join(n), Some(*ino))),
                );
            }
        }
        if !found.truncated {
            self.folders.retain(|p, _| visited.contains(p));
            let kept: HashSet<i32> = self.folders.values().filter_map(|f| f.wd).collect();
            if let Some(w) = self.watcher.as_mut() {
                let gone: Vec<i32> = w
                    .paths
                    .keys()
                    .filter(|wd| !kept.contains(wd))
                    .copied()
                    .collect();
                for wd in gone {
                    let _ = rustix::fs::inotify::remove_watch(&w.fd, wd);
                    w.paths.remove(&wd);
                }
            }
        }
        found
    }
}

impl Default for Tree {
    fn default() -> Tree {
        Tree::new()
    }
}

/// The entries of `dir` that matter to the walk.
fn list(dir: &Path) -> Folder {
    use std::os::unix::fs::DirEntryExt;
    let mut folder = Folder::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return folder;
    };
    let (mut head, mut objects, mut refs, mut commondir) = (false, false, false, false);
    for entry in entries.flatten() {
        folder.entries += 1;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        match name.to_str() {
            Some(".git") => {
                folder.dot_git = Some(kind.is_dir());
                continue;
            }
            Some("HEAD") => head = true,
            Some("objects") => objects = true,
            Some("refs") => refs = true,
            Some("commondir") => commondir = true,
            _ => {}
        }
        if kind.is_dir() {
            folder.subdirs.push((name, entry.ino()));
        } else if kind.is_symlink() {
            let text = std::fs::read_link(dir.join(&name)).ok();
            folder.links.push((name, text));
        }
    }
    folder.candidate = head && ((objects && refs) || commondir);
    folder
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_in() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        for d in ["a/b", "c"] {
            std::fs::create_dir_all(ws.join(d)).expect("mkdir");
        }
        (dir, ws)
    }

    #[test]
    fn by_change_time_a_folder_is_listed_again_only_when_it_changed() {
        let (_dir, ws) = tree_in();
        let roots = [ws.clone()];
        let mut tree = Tree::unwatched();
        // Every change time trusted: the second walk lists nothing and finds the same.
        let first = tree.walk_settled(&roots, i64::MAX);
        assert_eq!((first.listed, first.folders), (4, 4));
        let again = tree.walk_settled(&roots, i64::MAX);
        assert_eq!((again.listed, again.stated, again.folders), (0, 4, 4));
        // A folder swapped for another (a new inode) is listed, whatever its change time.
        std::fs::rename(ws.join("c"), ws.join("a/c-old")).expect("mv");
        std::fs::create_dir_all(ws.join("c/.git")).expect("mkdir");
        let swapped = tree.walk_settled(&roots, i64::MAX);
        assert!(swapped.dot_git.contains(&ws.join("c/.git")), "{swapped:?}");
        // With the real threshold, folders changed a moment ago are listed every time.
        let mut tree = Tree::unwatched();
        let recent = tree.walk(&roots);
        let recent_again = tree.walk(&roots);
        assert_eq!(recent.folders, 5);
        assert_eq!(recent_again.listed, 5, "{recent_again:?}");
        // What is gone leaves the tree.
        std::fs::remove_dir_all(ws.join("a")).expect("rm");
        tree.walk(&roots);
        assert_eq!(tree.folders.len(), 2);
    }

    #[test]
    fn watched_a_folder_is_looked_at_only_when_inotify_says_it_changed() {
        let (_dir, ws) = tree_in();
        let roots = [ws.clone()];
        let mut tree = Tree::new();
        assert!(tree.watcher.is_some(), "needs inotify");
        // Change times trusted for ever: only the events can tell.
        let first = tree.walk_settled(&roots, i64::MAX);
        assert_eq!((first.listed, first.folders), (4, 4));
        let again = tree.walk_settled(&roots, i64::MAX);
        // Only the root is looked at (nothing lists its inode).
        assert_eq!((again.listed, again.stated, again.folders), (0, 1, 4));
        // An entry made in a folder, however quickly: that folder is listed.
        std::fs::create_dir_all(ws.join("a/b/x/objects")).expect("mkdir");
        std::fs::write(ws.join("a/b/x/HEAD"), "ref: refs/heads/main\n").expect("w");
        std::fs::create_dir(ws.join("a/b/x/refs")).expect("mkdir");
        let made = tree.walk_settled(&roots, i64::MAX);
        assert!(made.candidates.contains(&ws.join("a/b/x")), "{made:?}");
        // A folder moved away and another put in its place.
        std::fs::rename(ws.join("c"), ws.join("a/c-old")).expect("mv");
        std::fs::create_dir_all(ws.join("c")).expect("mkdir");
        std::fs::write(ws.join("c/.git"), "gitdir: ../x\n").expect("w");
        std::os::unix::fs::symlink("../a", ws.join("c/up")).expect("ln");
        let swapped = tree.walk_settled(&roots, i64::MAX);
        assert!(swapped.links.contains(&ws.join("c/.git")), "{swapped:?}");
        // Its symlinks are found, and not followed.
        assert_eq!(
            swapped.symlinks,
            [(ws.join("c/up"), Some(PathBuf::from("../a")))],
            "{swapped:?}"
        );
        assert!(tree.walked(&ws.join("a/b")) && !tree.walked(&ws.join("c/up")));
        let quiet = tree.walk_settled(&roots, i64::MAX);
        assert_eq!((quiet.listed, quiet.stated), (0, 1), "{quiet:?}");
        // Gone: its watches go too.
        std::fs::remove_dir_all(ws.join("a")).expect("rm");
        tree.walk_settled(&roots, i64::MAX);
        let watches = tree.watcher.as_ref().map_or(0, |w| w.paths.len());
        assert_eq!((tree.folders.len(), watches), (2, 2));
    }
}
