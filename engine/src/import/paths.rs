//! rocprofv3's output path placeholders in rocflow's syntax.
//!
//! rocprofv3 fills `%hostname%`, `%pid%`, `%ppid%`, `%rank%` and `%launch_time%` (also
//! written `{hostname}` …, or `%h`, `%p`, `%r`), which rocflow fills as `{hostname}`,
//! `{pid}`, `{ppid}`, `{rank}` and `{timestamp}`. Its other keys (`%job%`, `%nid%`,
//! `%env{NAME}%`, …) have no rocflow value: each becomes a pipeline parameter that a run sets
//! with `--set`, and so does any other `{name}`, which rocflow would read as a placeholder.

/// What a run knows before the application starts, for the placeholders that name it:
/// the application's command line, the directory, the job and the environment.
pub struct RunValues {
    /// The application and its arguments.
    pub command: Vec<String>,
    pub cwd: String,
    /// Reads the environment.
    pub env: fn(&str) -> Option<String>,
}

impl RunValues {
    /// A run of `command` from here.
    pub fn here(command: &[std::ffi::OsString]) -> RunValues {
        let cwd = std::env::current_dir().unwrap_or_default();
        RunValues {
            command: command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            cwd: cwd.to_string_lossy().into_owned(),
            env: |name| std::env::var(name).ok(),
        }
    }

    /// What a key stands for in this run, where it is the same for every process.
    fn value(&self, key: &str) -> Option<String> {
        let words = |words: &[String]| {
            let joined = words.join("_").replace('/', "_");
            joined.trim_start_matches(['.', '_']).to_owned()
        };
        let base = |program: &str| program.rsplit('/').next().unwrap_or(program).to_owned();
        let (program, args) = self.command.split_first()?;
        Some(match key {
            "argv" => words(&self.command),
            "argt" => words(&[&[base(program)], args].concat()),
            "args" => words(args),
            "tag" => base(program),
            "cwd" => self.cwd.clone(),
            "job" => (self.env)("SLURM_JOB_ID").unwrap_or_else(|| "0".into()),
            "size" => rocflow_core::mpi::world(self.env)
                .and_then(|w| w.size)
                .unwrap_or(1)
                .to_string(),
            _ => {
                let n: usize = key.strip_prefix("arg")?.parse().ok()?;
                words(std::slice::from_ref(self.command.get(n)?))
            }
        })
    }

    /// `path` with what this run knows filled in, as rocprofv3 fills it before the
    /// application starts: the environment (again while a value brings placeholders of
    /// its own), the command line, the directory, the job and the world size. What differs
    /// between processes is left for [`translate`].
    pub fn expand(&self, path: &str) -> String {
        let mut path = path.to_owned();
        // A value that names itself stops at the limit.
        for _ in 0..8 {
            let expanded = self.expand_once(&path);
            if expanded == path {
                break;
            }
            path = expanded;
        }
        path
    }

    fn expand_once(&self, path: &str) -> String {
        let mut text = String::with_capacity(path.len());
        let mut rest = path;
        while let Some(at) = rest.find(['%', '$']) {
            text.push_str(&rest[..at]);
            rest = &rest[at..];
            match self.known(rest) {
                Some((len, value)) => {
                    text.push_str(&value);
                    rest = &rest[len..];
                }
                None => {
                    text.push_str(&rest[..1]);
                    rest = &rest[1..];
                }
            }
        }
        text.push_str(rest);
        text
    }

    /// The placeholder at the start of `text` this run has a value for, and its length.
    fn known(&self, text: &str) -> Option<(usize, String)> {
        for (open, close) in ENVIRONMENT {
            if let Some(after) = text.strip_prefix(open) {
                let end = after.find(close)?;
                let value = (self.env)(&after[..end]).unwrap_or_default();
                let value = value.trim_start_matches([' ', '\t', '/']);
                let value = value.replace([' ', '\t', '/'], "_");
                return Some((open.len() + end + close.len(), value));
            }
        }
        let after = text.strip_prefix('%')?;
        let key = &after[..after.find('%')?];
        Some((key.len() + 2, self.value(key)?))
    }
}

/// A translated path and the parameters it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    pub text: String,
    pub params: Vec<Param>,
}

/// A placeholder that became a parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The parameter's name, also its default value (never empty, so a path stays relative).
    pub name: String,
    /// The placeholder as the user wrote it.
    pub written: String,
}

/// rocprofv3's keys that rocflow fills too, with rocflow's name.
const EQUIVALENT: &[(&str, &str)] = &[
    ("hostname", "hostname"),
    ("pid", "pid"),
    ("ppid", "ppid"),
    ("rank", "rank"),
    // rocprofv3 fills it with the MPI rank (0 outside MPI), whatever its documentation says.
    ("nid", "rank"),
    ("launch_time", "timestamp"),
];

/// rocprofv3's keys that rocflow has no value for.
const OTHER_KEYS: &[&str] = &[
    "argv",
    "argt",
    "args",
    "tag",
    "pgid",
    "psid",
    "psize",
    "job",
    "size",
    "cwd",
    "launch_date",
];

/// `%h`, `%p`, … and the key each stands for.
const SHORTHANDS: &[(char, &str)] = &[
    ('h', "hostname"),
    ('p', "pid"),
    ('j', "job"),
    ('r', "rank"),
    ('s', "size"),
];

/// Environment-variable forms: `%env{NAME}%`, `%q{NAME}%`, `$env{NAME}`, `$ENV{NAME}`.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("%env{", "}%"),
    ("%q{", "}%"),
    ("$env{", "}"),
    ("$ENV{", "}"),
];

/// What a placeholder becomes.
enum Key {
    Rocflow(&'static str),
    Param(String),
}

/// Translates a path.
pub fn translate(path: &str) -> Translated {
    let mut text = String::with_capacity(path.len());
    let mut params: Vec<Param> = Vec::new();
    let mut rest = path;
    while let Some(at) = rest.find(['%', '$', '{']) {
        text.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some((len, key)) = placeholder(rest) else {
            let c = rest.chars().next().expect("found a character");
            text.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        match key {
            Key::Rocflow(name) => text.push_str(&format!("{{{name}}}")),
            Key::Param(name) => {
                text.push_str(&format!("{{{name}}}"));
                if !params.iter().any(|p| p.name == name) {
                    params.push(Param {
                        name,
                        written: rest[..len].to_owned(),
                    });
                }
            }
        }
        rest = &rest[len..];
    }
    text.push_str(rest);
    Translated { text, params }
}

/// The placeholder at the start of `text`: its length and what it becomes.
fn placeholder(text: &str) -> Option<(usize, Key)> {
    for (open, close) in ENVIRONMENT {
        if let Some(after) = text.strip_prefix(open) {
            let end = after.find(close)?;
            let name: String = after[..end]
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            return Some((
                open.len() + end + close.len(),
                Key::Param(format!("env_{name}")),
            ));
        }
    }
    let (key, len) = if let Some(after) = text.strip_prefix('%') {
        let full = after
            .find('%')
            .map(|end| &after[..end])
            .filter(|key| known(key));
        match full {
            Some(key) => (key, key.len() + 2),
            None => {
                let c = after.chars().next()?;
                let (_, key) = SHORTHANDS.iter().find(|(s, _)| *s == c)?;
                (*key, 2)
            }
        }
    } else if let Some(after) = text.strip_prefix('{') {
        let key = &after[..after.find('}')?];
        if !crate::pipeline::params::is_identifier(key) {
            return None;
        }
        (key, key.len() + 2)
    } else {
        return None;
    };
    let mapped = match EQUIVALENT.iter().find(|(k, _)| *k == key) {
        Some((_, rocflow)) => Key::Rocflow(rocflow),
        None => Key::Param(key.to_owned()),
    };
    Some((len, mapped))
}

fn known(key: &str) -> bool {
    EQUIVALENT.iter().any(|(k, _)| *k == key)
        || OTHER_KEYS.contains(&key)
        || key
            .strip_prefix("arg")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(t: &Translated) -> Vec<(&str, &str)> {
        t.params
            .iter()
            .map(|p| (p.name.as_str(), p.written.as_str()))
            .collect()
    }

    #[test]
    fn equivalents_become_rocflow_placeholders() {
        let t = translate("%hostname%/%pid%-%ppid%.%rank%_%launch_time%");
        assert_eq!(t.text, "{hostname}/{pid}-{ppid}.{rank}_{timestamp}");
        assert!(t.params.is_empty());
        assert_eq!(translate("%h.%p.%r").text, "{hostname}.{pid}.{rank}");
        assert_eq!(translate("{hostname}/{pid}").text, "{hostname}/{pid}");
        assert_eq!(translate("out/50%").text, "out/50%");
    }

    #[test]
    fn others_become_parameters() {
        let t = translate("%h.%p.%env{OMPI_COMM_WORLD_RANK}%/%job%-%j-$ENV{HOME}-%arg0%-{x}");
        assert_eq!(
            t.text,
            "{hostname}.{pid}.{env_OMPI_COMM_WORLD_RANK}/{job}-{job}-{env_HOME}-{arg0}-{x}"
        );
        assert_eq!(
            params(&t),
            [
                ("env_OMPI_COMM_WORLD_RANK", "%env{OMPI_COMM_WORLD_RANK}%"),
                ("job", "%job%"),
                ("env_HOME", "$ENV{HOME}"),
                ("arg0", "%arg0%"),
                ("x", "{x}"),
            ]
        );
        // Text that is no placeholder stays as it is.
        assert_eq!(translate("%foo%/{1,2}/$x").text, "%foo%/{1,2}/$x");
    }

    #[test]
    fn a_run_fills_in_what_it_knows_before_the_application_starts() {
        let run = RunValues {
            command: ["./bin/transpose", "2", "500"].map(String::from).to_vec(),
            cwd: "/work".into(),
            env: |name| match name {
                "TAGGED" => Some("%tag%-inp".into()),
                "SPACED" => Some(" /a b/c".into()),
                "SLURM_JOB_ID" => Some("77".into()),
                _ => None,
            },
        };
        assert_eq!(run.expand("%tag%-trace"), "transpose-trace");
        assert_eq!(
            run.expand("%argt%/%args%/%arg1%"),
            "transpose_2_500/2_500/2"
        );
        assert_eq!(run.expand("%argv%"), "bin_transpose_2_500");
        assert_eq!(run.expand("%cwd%/%job%-%size%"), "/work/77-1");
        assert_eq!(run.expand("d/%env{TAGGED}%"), "d/transpose-inp");
        assert_eq!(run.expand("$ENV{SPACED}.%env{UNSET}%"), "a_b_c.");
        // What differs between processes is left for the sinks.
        assert_eq!(
            run.expand("%hostname%/%pid%_%nid%"),
            "%hostname%/%pid%_%nid%"
        );
        assert_eq!(translate("%nid%").text, "{rank}");
    }
}
