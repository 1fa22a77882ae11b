//! The import graph of a crate: which of its files uses an item that which other file
//! defines. `tests/structure.rs` holds every crate to one direction with it (no file that,
//! through others, uses itself) and prints its figures.
//!
//! What counts as a use: a `use` item, and every `crate::`, `super::` or `self::` path in the
//! code, a path that starts with a name a `use` brought in, or with a child module's name;
//! also such paths inside macro calls. A path is followed through the `use` items of the
//! modules it names to the file that defines its item, so a `pub use` facade is no edge of
//! its own, and a child that names its parent's re-export depends on the file behind it.
//! Code under `#[cfg(test)]` is left out: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A crate's files and the imports between them.
#[derive(Debug)]
pub struct Graph {
    /// Each file, relative to the crate's source folder.
    pub files: Vec<PathBuf>,
    /// `(from, to)`: `from` uses an item that `to` defines; never a file to itself.
    pub imports: BTreeSet<(usize, usize)>,
}

/// A module: its file, what it defines, and the names its `use` items bind.
#[derive(Debug, Default)]
struct Module {
    file: usize,
    children: BTreeSet<String>,
    items: BTreeSet<String>,
    /// Name bound → the absolute path it stands for.
    bound: BTreeMap<String, Vec<String>>,
    /// Absolute paths of modules glob-imported (`use x::*`).
    globs: Vec<Vec<String>>,
}

/// A use found in the code, before the whole crate is known: from which module, what path.
struct Use {
    module: Vec<String>,
    path: Vec<String>,
}

impl Graph {
    /// The graph of the crate whose root file is `root` (`src/lib.rs`).
    pub fn of_crate(root: &Path) -> Graph {
        let base = root
            .parent()
            .expect("a root file in a folder")
            .to_path_buf();
        let mut crate_ = Crate {
            base,
            files: Vec::new(),
            modules: BTreeMap::new(),
            uses: Vec::new(),
        };
        crate_.read(root, Vec::new());
        let mut imports = BTreeSet::new();
        for found in &crate_.uses {
            let module = &crate_.modules[&found.module];
            let (last, prefix) = found.path.split_last().expect("a path has a segment");
            if let Some(to) = absolute(&found.module, prefix, last, module)
                .and_then(|path| crate_.resolve(&path, 0))
                && to != module.file
            {
                imports.insert((module.file, to));
            }
        }
        let files = (crate_.files.iter())
            .map(|f| f.strip_prefix(&crate_.base).unwrap_or(f).to_path_buf())
            .collect();
        Graph { files, imports }
    }

    /// The same graph between the crate's top-level modules: each file counted in the one
    /// it is in (`sink/csv/mod.rs` in `sink`, `stage.rs` in `stage`, `lib.rs` on its own).
    pub fn modules(&self) -> Graph {
        let of = |file: &Path| -> PathBuf {
            let first = file
                .components()
                .next()
                .map(|c| PathBuf::from(c.as_os_str()));
            match first {
                Some(first) if file.components().count() > 1 => first,
                _ => file.with_extension(""),
            }
        };
        let mut files: Vec<PathBuf> = self.files.iter().map(|f| of(f)).collect();
        files.sort();
        files.dedup();
        let index = |file: &PathBuf| files.binary_search(&of(file)).expect("listed");
        let imports = (self.imports.iter())
            .map(|&(a, b)| (index(&self.files[a]), index(&self.files[b])))
            .filter(|(a, b)| a != b)
            .collect();
        Graph { files, imports }
    }

    /// Each circle: files that use one another, through others or directly; sorted by size,
    /// largest first.
    pub fn circles(&self) -> Vec<Vec<usize>> {
        let mut circles: Vec<Vec<usize>> = (self.components().into_iter())
            .filter(|c| c.len() > 1)
            .collect();
        circles.sort_by_key(|c| std::cmp::Reverse(c.len()));
        circles
    }

    /// Imports between two files of one circle: those a layering would have to undo.
    pub fn imports_in_circles(&self) -> usize {
        let circle_of = self.circle_of();
        (self.imports.iter())
            .filter(|(a, b)| circle_of[*a] == circle_of[*b])
            .count()
    }

    /// The longest chain of imports, in files, a circle counted as one floor: how many
    /// floors the crate's house has.
    pub fn floors(&self) -> usize {
        let circle_of = self.circle_of();
        let count = circle_of.iter().max().map_or(0, |m| m + 1);
        let mut above: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); count];
        for &(a, b) in &self.imports {
            if circle_of[a] != circle_of[b] {
                above[circle_of[a]].insert(circle_of[b]);
            }
        }
        // Tarjan's components come out users after what they use: each one's floor is one
        // above the highest it imports.
        let mut floor = vec![0; count];
        for c in 0..count {
            floor[c] = 1 + above[c].iter().map(|&u| floor[u]).max().unwrap_or(0);
        }
        floor.into_iter().max().unwrap_or(0)
    }

    /// Floors and imports that run back up, for a layering that keeps every import it can:
    /// imports are followed depth-first from each file in turn, and one that reaches a file
    /// still being followed runs back up; the floors are the longest chain of the others.
    /// Without circles, no import runs back up and the floors are [`Graph::floors`].
    pub fn layering(&self) -> (usize, usize) {
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in &self.imports {
            next[a].push(b);
        }
        // 0: not reached, 1: being followed, 2: done, with its floor.
        let (mut state, mut floor, mut back) = (vec![0u8; n], vec![0usize; n], 0);
        fn follow(
            v: usize,
            next: &[Vec<usize>],
            state: &mut [u8],
            floor: &mut [usize],
            back: &mut usize,
        ) {
            state[v] = 1;
            let mut highest = 0;
            for &w in &next[v] {
                match state[w] {
                    0 => {
                        follow(w, next, state, floor, back);
                        highest = highest.max(floor[w]);
                    }
                    1 => *back += 1,
                    _ => highest = highest.max(floor[w]),
                }
            }
            floor[v] = highest + 1;
            state[v] = 2;
        }
        for v in 0..n {
            if state[v] == 0 {
                follow(v, &next, &mut state, &mut floor, &mut back);
            }
        }
        (floor.into_iter().max().unwrap_or(0), back)
    }

    /// A file's name for people: its path in the crate.
    pub fn name(&self, file: usize) -> String {
        self.files[file].display().to_string()
    }

    /// The component each file is in, numbered in the order Tarjan's algorithm closes them
    /// (every component after those it imports).
    fn circle_of(&self) -> Vec<usize> {
        let mut of = vec![0; self.files.len()];
        for (n, component) in self.components().into_iter().enumerate() {
            for file in component {
                of[file] = n;
            }
        }
        of
    }

    /// Strongly connected components (Tarjan), those imported closed first.
    fn components(&self) -> Vec<Vec<usize>> {
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in &self.imports {
            next[a].push(b);
        }
        let mut state = Tarjan {
            next,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            counter: 0,
            components: Vec::new(),
        };
        for v in 0..n {
            if state.index[v].is_none() {
                state.visit(v);
            }
        }
        state.components
    }
}

struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for i in 0..self.next[v].len() {
            let w = self.next[v][i];
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort_unstable();
            self.components.push(component);
        }
    }
}

/// A crate as it is read: its files, its modules, and the uses found so far.
struct Crate {
    base: PathBuf,
    files: Vec<PathBuf>,
    modules: BTreeMap<Vec<String>, Module>,
    uses: Vec<Use>,
}

impl Crate {
    /// Reads the file of module `path`, and the files of the modules it declares.
    fn read(&mut self, file: &Path, path: Vec<String>) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let parsed =
            syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
        let index = self.files.len();
        self.files.push(file.to_path_buf());
        // Where the files of this module's children are.
        let dir = match file.file_stem().and_then(|s| s.to_str()) {
            Some("mod" | "lib" | "main") => file.parent().expect("in a folder").to_path_buf(),
            _ => file.with_extension(""),
        };
        self.items(&parsed.items, index, &path, &dir);
        let mut walk = Walk {
            module: path,
            uses: &mut self.uses,
        };
        walk.visit_file(&parsed);
    }

    /// Records the module `path` that `items` make up (in file `file`), and reads its
    /// children.
    fn items(&mut self, items: &[syn::Item], file: usize, path: &[String], dir: &Path) {
        let mut module = Module {
            file,
            ..Module::default()
        };
        let mut children = Vec::new();
        let kept = || items.iter().filter(|i| !for_tests(attrs(i)));
        for item in kept() {
            match item {
                syn::Item::Mod(m) => {
                    module.children.insert(m.ident.to_string());
                    children.push(m);
                }
                other => module.items.extend(name(other)),
            }
        }
        // Children first: a `use` may start at one.
        for item in kept() {
            if let syn::Item::Use(u) = item {
                bind(&u.tree, path, &[], &mut module);
            }
        }
        self.modules.insert(path.to_vec(), module);
        for m in children {
            let mut child = path.to_vec();
            child.push(m.ident.to_string());
            match &m.content {
                Some((_, items)) => self.items(items, file, &child, &dir.join(m.ident.to_string())),
                None => {
                    let name = m.ident.to_string();
                    let flat = dir.join(format!("{name}.rs"));
                    let file = if flat.exists() {
                        flat
                    } else {
                        dir.join(&name).join("mod.rs")
                    };
                    self.read(&file, child);
                }
            }
        }
    }

    /// The file that defines what `path` (absolute) names, following `use` items; `None`
    /// for a path outside the crate or naming a module itself.
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        if depth > 16 {
            return None;
        }
        let mut at: Vec<String> = Vec::new();
        for (i, segment) in path.iter().enumerate() {
            let module = self.modules.get(&at)?;
            if module.children.contains(segment) {
                at.push(segment.clone());
                continue;
            }
            if module.items.contains(segment) {
                return Some(module.file);
            }
            if let Some(target) = module.bound.get(segment) {
                let mut further = target.clone();
                further.extend_from_slice(&path[i + 1..]);
                return self.resolve(&further, depth + 1);
            }
            for glob in &module.globs {
                let mut further = glob.clone();
                further.extend_from_slice(&path[i..]);
                if let Some(file) = self.resolve(&further, depth + 1) {
                    return Some(file);
                }
            }
            return Some(module.file);
        }
        None
    }
}

/// Records the names `tree` binds in `module` (whose path is `at`), each as the absolute
/// path it stands for; `prefix` is the tree's path so far.
fn bind(tree: &syn::UseTree, at: &[String], prefix: &[String], module: &mut Module) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut prefix = prefix.to_vec();
            prefix.push(p.ident.to_string());
            bind(&p.tree, at, &prefix, module);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if let Some(path) = absolute(at, prefix, &name, module) {
                let bound = if name == "self" {
                    prefix.last().cloned()
                } else {
                    Some(name)
                };
                module.bound.extend(bound.map(|b| (b, path)));
            }
        }
        syn::UseTree::Rename(r) => {
            if let Some(path) = absolute(at, prefix, &r.ident.to_string(), module) {
                module.bound.insert(r.rename.to_string(), path);
            }
        }
        syn::UseTree::Glob(_) => {
            if let Some(path) = absolute(at, prefix, "self", module) {
                module.globs.push(path);
            }
        }
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                bind(tree, at, prefix, module);
            }
        }
    }
}

/// `prefix::last`, used in the module at `at`, as an absolute path in the crate; `None`
/// where it starts outside it. A path in a `use` starts at `crate`, `self`, `super`, or a
/// child module (or a name bound before, for paths met in code).
fn absolute(at: &[String], prefix: &[String], last: &str, module: &Module) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = prefix.iter().map(String::as_str).collect();
    segments.push(last);
    let mut path = match segments[0] {
        "crate" => Vec::new(),
        "self" | "super" => at.to_vec(),
        first if module.children.contains(first) => at.to_vec(),
        first => {
            let mut bound = module.bound.get(first)?.clone();
            bound.extend(segments[1..].iter().map(|s| s.to_string()));
            return Some(bound);
        }
    };
    let mut rest = &segments[..];
    if segments[0] == "crate" || segments[0] == "self" {
        rest = &segments[1..];
    }
    while let Some((&"super", tail)) = rest.split_first() {
        path.pop()?;
        rest = tail;
    }
    path.extend(rest.iter().filter(|s| **s != "self").map(|s| s.to_string()));
    Some(path)
}

/// The attributes of an item.
fn attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The name an item defines, if any.
fn name(item: &syn::Item) -> Option<String> {
    use syn::Item::*;
    let ident = match item {
        Const(i) => &i.ident,
        Enum(i) => &i.ident,
        Fn(i) => &i.sig.ident,
        Static(i) => &i.ident,
        Struct(i) => &i.ident,
        Trait(i) => &i.ident,
        TraitAlias(i) => &i.ident,
        Type(i) => &i.ident,
        Union(i) => &i.ident,
        Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Whether attributes keep an item to tests: `#[cfg(test)]`, `#[cfg(all(test, …))]`.
fn for_tests(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|list| {
                let tokens = list.tokens.to_string();
                tokens == "test" || tokens.starts_with("all (test")
            })
    })
}

/// Walks a file's code, collecting the paths that may name the crate's items.
struct Walk<'a> {
    /// The module the walk is in (inline modules included).
    module: Vec<String>,
    uses: &'a mut Vec<Use>,
}

impl Walk<'_> {
    fn found(&mut self, segments: Vec<String>) {
        if segments.first().is_some_and(|s| s != "Self") {
            self.uses.push(Use {
                module: self.module.clone(),
                path: segments,
            });
        }
    }
}

/// Paths reach [`Crate::resolve`] relative to their module; [`Graph::of_crate`] makes them
/// absolute through [`absolute`] with the module's bindings.
impl<'ast> Visit<'ast> for Walk<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !for_tests(attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !for_tests(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A re-export is a facade, not a use: paths through it are followed to the file
        // behind it.
        if matches!(u.vis, syn::Visibility::Inherited) {
            let mut leaves = Vec::new();
            leaves_of(&u.tree, &mut Vec::new(), &mut leaves);
            for leaf in leaves {
                self.found(leaf);
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.found(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        for path in paths_in(mac.tokens.clone()) {
            self.found(path);
        }
    }
}

/// Every full path of a use tree (a glob as its module).
fn leaves_of(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            leaves_of(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut leaf = prefix.clone();
            if n.ident != "self" {
                leaf.push(n.ident.to_string());
            }
            out.push(leaf);
        }
        syn::UseTree::Rename(r) => {
            let mut leaf = prefix.clone();
            leaf.push(r.ident.to_string());
            out.push(leaf);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                leaves_of(tree, prefix, out);
            }
        }
    }
}

/// Paths written `a::b::c` in a macro's tokens, which are not parsed as code.
fn paths_in(tokens: proc_macro2::TokenStream) -> Vec<Vec<String>> {
    use proc_macro2::TokenTree;
    let mut paths = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut colons = 0;
    for token in tokens {
        match token {
            TokenTree::Ident(ident) if current.is_empty() || colons == 2 => {
                current.push(ident.to_string());
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' && !current.is_empty() && colons < 2 => {
                colons += 1;
            }
            TokenTree::Group(group) => {
                paths.extend(take(&mut current));
                colons = 0;
                paths.extend(paths_in(group.stream()));
            }
            other => {
                paths.extend(take(&mut current));
                colons = 0;
                if let TokenTree::Ident(ident) = other {
                    current.push(ident.to_string());
                }
            }
        }
    }
    paths.extend(take(&mut current));
    paths
}

/// A path of two segments or more, taken out of `current`.
fn take(current: &mut Vec<String>) -> Option<Vec<String>> {
    let path = std::mem::take(current);
    (path.len() > 1).then_some(path)
}
