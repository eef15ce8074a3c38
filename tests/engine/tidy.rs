//! Rules of the code base that the compiler does not check, checked here (in the spirit of
//! rust-analyzer's `tidy.rs`). The graph between crates is Cargo's (each crate's `Cargo.toml`);
//! inside the `pod` crate:
//!
//! - the dependency table in `docs/architecture.md` ("What may depend on what") is exactly what
//!   each module of `src/` names of the others, and it has no cycle. Files are parsed with `syn`,
//!   so a path counts wherever the compiler would resolve it: `use crate::…` and `use
//!   super::…` trees (groups included), paths in code, and `crate::…` inside macro calls; never
//!   comments, doc comments or strings;
//! - every source file of every crate opens with a `//!` header saying what it owns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

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

/// The module path of a file of `src/` (`src/a/b.rs` and `src/a/b/mod.rs` -> `[a, b]`); empty
/// for the crate roots.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let Ok(relative) = file.strip_prefix(src) else {
        return Vec::new();
    };
    let mut parts: Vec<String> = relative
        .components()
        .filter_map(|c| c.as_os_str().to_str().map(String::from))
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
        if !matches!(stem.as_str(), "mod" | "lib" | "main") {
            parts.push(stem);
        }
    }
    parts
}

/// Collects the top-level modules a file names, resolving `crate`, `super` and `self`.
struct Uses {
    /// The module the code being visited is in (the file's path, then inline `mod`s).
    here: Vec<String>,
    found: BTreeSet<String>,
}

impl Uses {
    /// Records the module a path starting at `at` (already resolved) names next.
    fn record(&mut self, at: &[String], next: &str) {
        if at.is_empty() && !matches!(next, "self" | "super" | "crate") {
            self.found.insert(next.to_string());
        }
    }

    /// Resolves the leading `crate` / `super` / `self` segments of `segments`; `None` when the
    /// path does not start at one of them (an extern crate, a local item).
    fn resolve<'s>(&self, segments: &'s [String]) -> Option<(Vec<String>, &'s [String])> {
        let first = segments.first()?;
        let mut at = match first.as_str() {
            "crate" => Vec::new(),
            "super" | "self" => self.here.clone(),
            _ => return None,
        };
        let mut rest = segments;
        if first == "crate" {
            rest = &rest[1..];
        }
        while let Some(s) = rest.first() {
            match s.as_str() {
                "super" => {
                    at.pop()?;
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        Some((at, rest))
    }

    fn path(&mut self, segments: &[String]) {
        if let Some((at, rest)) = self.resolve(segments) {
            if let Some(next) = rest.first() {
                self.record(&at, next);
            }
        }
    }

    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.path(prefix);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.path(prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => {
                // `use crate::x::*` names x; `use super::*` names nothing new.
                if let Some((at, rest)) = self.resolve(prefix) {
                    if let Some(next) = rest.first() {
                        self.record(&at, next);
                    }
                }
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.tree(prefix, item);
                }
            }
        }
    }

    /// `crate :: name` inside a macro's tokens.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        for (i, token) in tokens.iter().enumerate() {
            match token {
                proc_macro2::TokenTree::Group(g) => self.tokens(g.stream()),
                proc_macro2::TokenTree::Ident(id) if id == "crate" => {
                    if let (
                        Some(proc_macro2::TokenTree::Punct(a)),
                        Some(proc_macro2::TokenTree::Punct(b)),
                        Some(proc_macro2::TokenTree::Ident(name)),
                    ) = (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3))
                    {
                        if a.as_char() == ':' && b.as_char() == ':' {
                            self.record(&[], &name.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.path(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.here.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.here.pop();
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// The top-level modules the source `text` of the module at `here` names.
fn uses_of(text: &str, here: &[String]) -> BTreeSet<String> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("does not parse: {e}"));
    let mut uses = Uses {
        here: here.to_vec(),
        found: BTreeSet::new(),
    };
    uses.visit_file(&file);
    uses.found
}

/// What the code uses: module of `src/` -> the other top-level names it uses.
fn actual() -> Graph {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let here = module_path(&src, &file);
        let Some(module) = here.first().cloned() else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let found = std::panic::catch_unwind(|| uses_of(&text, &here))
            .unwrap_or_else(|_| panic!("{} does not parse", file.display()));
        let uses = graph.entry(module.clone()).or_default();
        uses.extend(found.into_iter().filter(|m| *m != module));
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
    let mut in_modules = false;
    for line in text[start..].lines().skip(1) {
        if line.starts_with("## ") {
            break;
        }
        if line.starts_with("| module |") {
            in_modules = true;
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", "`module`", "`a`, `b`", ""]
        if !in_modules || cells.len() != 4 || !cells[1].starts_with('`') {
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

/// The names the `pod` crate re-exports from the crates below it (`pub use pod_protocol as
/// protocol;` in src/lib.rs): modules may use them like their own.
const CRATES: [&str; 3] = ["protocol", "permission", "builtin"];

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
    for (module, uses) in &documented {
        if !actual.contains_key(module) {
            problems.push(format!("the table lists `{module}`, which is not in src/"));
        }
        for name in uses {
            if !documented.contains_key(name) && !CRATES.contains(&name.as_str()) {
                problems.push(format!(
                    "the table lets {module} use `{name}`, which is neither a module nor a crate"
                ));
            }
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
    for krate in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let src = krate.expect("entry").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
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
fn the_reader_catches_what_a_text_search_missed() {
    let top = |m: &str| vec![m.to_string()];
    let found = |text: &str, here: Vec<String>| -> Vec<String> {
        uses_of(text, &here).into_iter().collect()
    };
    // Comments, doc comments and strings are not dependencies; code is.
    assert_eq!(
        found(
            "use crate::protocol::Event; // crate::server\n/// [`crate::chat`]\nfn f() { let x = crate::tools::builtin(\"bash\"); }",
            top("a")
        ),
        ["protocol", "tools"]
    );
    // The three a line-based reader let through:
    // `super::` from a top-level module's file is the crate root;
    assert_eq!(found("use super::runtime::Pod;", top("chat")), ["runtime"]);
    // a `use` group;
    assert_eq!(
        found("use crate::{runtime::Pod, session::Log};", top("chat")),
        ["runtime", "session"]
    );
    // a `//` inside a string earlier on the line.
    assert_eq!(
        found(
            "fn f() { let u = \"http://x\"; let p = crate::runtime::Pod::new(); }",
            top("chat")
        ),
        ["runtime"]
    );
    // `super` inside an inline module, from a deeper file, and `crate::` inside a macro.
    assert_eq!(
        found(
            "mod tests { use super::super::super::model::X; }",
            vec!["tools".into(), "bash".into()]
        ),
        ["model"]
    );
    assert_eq!(
        found(
            "fn f() { assert!(matches!(x, crate::hooks::A)); }",
            top("a")
        ),
        ["hooks"]
    );
    // `super::X` in a file below a module stays in that module.
    assert!(found("use super::Thing;", vec!["tools".into(), "bash".into()]).is_empty());
    let src = Path::new("/r/src");
    assert_eq!(
        module_path(src, Path::new("/r/src/tools/bash.rs")),
        ["tools", "bash"]
    );
    assert_eq!(
        module_path(src, Path::new("/r/src/tools/mod.rs")),
        ["tools"]
    );
    assert!(module_path(src, Path::new("/r/src/main.rs")).is_empty());
}
