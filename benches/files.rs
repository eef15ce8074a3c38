//! What confining file access costs (docs/performance.md, "File confinement"): an atomic write
//! that follows no symlink against the plain one it replaced, a no-follow open against
//! `File::open`, and the hard-link check: a file with one link, a multi-link file the cached walk
//! clears, and the walk itself over a 10,000-file tree (`POD_BENCH_FILES=100000` for another
//! size).

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use pod::manifest::Manifest;
use pod::permission::FileRules;
use pod::tools::confined;

/// The atomic write pod used before: temp file, fsync, rename, folder fsync, all by path.
fn plain_atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let tmp = dir.join(format!(".x.pod-tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// A workspace of `files` files in folders of 100, with `read "*.env" deny`.
fn tree(files: usize) -> (tempfile::TempDir, std::path::PathBuf, FileRules) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    for i in 0..files {
        let folder = ws.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&folder).expect("mkdir");
        }
        std::fs::write(folder.join(format!("f{i}.rs")), "x").expect("write");
    }
    std::fs::write(ws.join(".env"), "SECRET=1").expect("write");
    std::fs::write(ws.join("shared"), "x").expect("write");
    std::fs::hard_link(ws.join("shared"), ws.join("shared2")).expect("link");
    let manifest = ws.join("pod.toml");
    std::fs::write(
        &manifest,
        "[permissions]\ndefault_action = \"allow\"\n[[permissions.rule]]\ntool = \"read\"\n\
         pattern = \"*.env\"\naction = \"deny\"\n",
    )
    .expect("manifest");
    let policy = Manifest::load(&manifest).expect("manifest").policy();
    (dir, ws, FileRules::new(Arc::new(policy)))
}

fn bench(c: &mut Criterion) {
    let files: usize = std::env::var("POD_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let (_dir, ws, rules) = tree(files);
    let mut g = c.benchmark_group("files");
    let target = ws.join("d000/written.txt");
    g.bench_function("write/plain_by_path", |b| {
        b.iter(|| plain_atomic_write(black_box(&target), b"content"))
    });
    g.bench_function("write/confined", |b| {
        b.iter(|| confined::write_atomic(&ws, black_box(&target), b"content"))
    });
    let file = ws.join("d000/f1.rs");
    g.bench_function("open_read/std", |b| {
        b.iter(|| std::fs::File::open(black_box(&file)))
    });
    g.bench_function("open_read/confined", |b| {
        b.iter(|| confined::open_read(black_box(&file)))
    });
    let one = std::fs::metadata(&file).expect("meta");
    g.bench_function("links/one_link", |b| {
        b.iter(|| rules.check_links(black_box(&file), &one))
    });
    // Old enough for the cached walk to clear it (the ctime margin is 1 s).
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let shared = ws.join("shared");
    let meta = std::fs::metadata(&shared).expect("meta");
    assert!(rules.check_links(&shared, &meta).is_ok());
    g.bench_function("links/cached_walk", |b| {
        b.iter(|| rules.check_links(black_box(&shared), &meta))
    });
    g.sample_size(10);
    g.bench_function(format!("links/walk_{files}_files"), |b| {
        b.iter(|| {
            let fresh = FileRules::new(Arc::new(
                Manifest::load(&ws.join("pod.toml"))
                    .expect("manifest")
                    .policy(),
            ));
            fresh.check_links(&shared, &meta)
        })
    });
    // A multi-link file that changes before every read: each check walks again, reading only
    // the folders whose mtime changed (none here) instead of the whole tree.
    g.bench_function(format!("links/rewalk_changed_file_{files}_files"), |b| {
        b.iter(|| {
            std::fs::write(&shared, "changed").expect("write");
            let meta = std::fs::metadata(&shared).expect("meta");
            rules.check_links(black_box(&shared), &meta)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
