//! Rules of the code base that the compiler does not check, checked here (in the spirit of
//! rust-analyzer's `tidy.rs`):
//!
//! - the dependency table in `docs/architecture.md` ("What may depend on what") is exactly what
//!   each module of `src/` uses through `crate::…`, and it has no cycle;
//! - every source file opens with a `//!` header saying what it owns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`src/permission/shell/walk.rs` ->
/// `permission`, `src/scope.rs` -> `scope`); `None` for the crate roots.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The modules a file names through `crate::<module>`, comments left out.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `crate::{a, b}` is not used in this code base; a path names one module.
            if !name.is_empty() {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

/// What the code uses: module -> the other modules it names.
fn actual() -> Graph {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let Some(module) = module_of(&src, &file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let uses = graph.entry(module.clone()).or_default();
        uses.extend(crate_paths(&text).into_iter().filter(|m| *m != module));
    }
    graph
}

/// The table under "What may depend on what" in docs/architecture.md: rows of
/// `| `module` | `a`, `b` |`.
fn documented() -> Graph {
    let path = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let start = text
        .find("## What may depend on what")
        .expect("docs/architecture.md has a \"## What may depend on what\" section");
    let mut graph = Graph::new();
    for line in text[start..].lines().skip(1) {
        if line.starts_with("## ") {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", "`module`", "`a`, `b`", ""]
        if cells.len() != 4 || !cells[1].starts_with('`') {
            continue;
        }
        let names = |cell: &str| -> BTreeSet<String> {
            cell.split(',')
                .map(|c| c.trim().trim_matches('`').to_string())
                .filter(|c| !c.is_empty() && c != "nothing")
                .collect()
        };
        let module = cells[1].trim_matches('`').to_string();
        assert!(
            graph.insert(module.clone(), names(cells[2])).is_none(),
            "docs/architecture.md lists `{module}` twice"
        );
    }
    assert!(!graph.is_empty(), "no table rows in docs/architecture.md");
    graph
}

#[test]
fn the_dependency_table_is_what_the_code_uses() {
    let actual = actual();
    let documented = documented();
    let mut problems = Vec::new();
    for (module, uses) in &actual {
        match documented.get(module) {
            None => problems.push(format!("src/{module}: no row in the table")),
            Some(allowed) => {
                for extra in uses.difference(allowed) {
                    problems.push(format!(
                        "{module} uses crate::{extra}, which the table does not allow"
                    ));
                }
                for stale in allowed.difference(uses) {
                    problems.push(format!(
                        "the table lets {module} use {stale}, which it does not (remove it)"
                    ));
                }
            }
        }
    }
    for module in documented.keys() {
        if !actual.contains_key(module) {
            problems.push(format!("the table lists `{module}`, which is not in src/"));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md, \"What may depend on what\":\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_documented_layering_has_no_cycle() {
    fn visit(
        graph: &Graph,
        module: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Result<(), String> {
        if let Some(i) = path.iter().position(|m| m == module) {
            return Err(format!("{} -> {module}", path[i..].join(" -> ")));
        }
        if done.contains(module) {
            return Ok(());
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            visit(graph, next, path, done)?;
        }
        path.pop();
        done.insert(module.to_string());
        Ok(())
    }
    let graph = documented();
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Err(cycle) = visit(&graph, module, &mut Vec::new(), &mut done) {
            panic!("a dependency cycle: {cycle}");
        }
    }
}

#[test]
fn every_source_file_opens_with_a_header() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            !text.starts_with("//!")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` header: {missing:?}"
    );
    assert!(files.len() > 50, "found only {} files", files.len());
}

#[test]
fn the_checks_see_what_they_claim() {
    // The reader itself: a path in a comment is not a dependency, one in code is.
    let text = "use crate::protocol::Event; // crate::server\n/// [`crate::chat`]\nlet x = crate::tools::builtin(\"bash\");";
    let found: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(found, ["protocol", "tools"]);
    let src = Path::new("/r/src");
    assert_eq!(
        module_of(src, Path::new("/r/src/permission/shell/walk.rs")).as_deref(),
        Some("permission")
    );
    assert_eq!(module_of(src, Path::new("/r/src/main.rs")), None);
}
