//! `rocflow completions` and `rocflow man`: shell completions and manual pages, made from
//! the command line's own definition so they never fall behind it.
//!
//! clap's completion scripts are static: they cannot know the templates on the user's
//! `ROCFLOW_PIPELINE_PATH` or the counters of the definitions installed. Each script is
//! clap's, wrapped: for a template name, a counter name (`--pmc`, `counters show`) or a
//! `--device`, it asks `rocflow __complete KIND WORD` (hidden) and offers what that prints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use clap_complete::Shell;

use crate::error::{Error, Result};
use crate::pipeline::Library;

use super::stdio::print;

/// The commands whose positional argument names a template (or a pipeline file).
const TEMPLATE_COMMANDS: &[&str] = &["run", "validate", "explain", "init", "templates show"];
/// The command whose positional argument names a counter.
const COUNTER_COMMAND: &str = "counters show";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script of a shell.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "rocflow", &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    print(&match args.shell {
        Shell::Bash => bash(&script),
        Shell::Zsh => zsh(&script),
        Shell::Fish => fish(&script, &cli),
        _ => script,
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The `case` pattern of the commands whose positional argument is of `kind`, given the
/// words `"$cmd1 $cmd2"` (the subcommand and the word after it).
fn positional_pattern(commands: &[&str], quote: fn(&str) -> String) -> String {
    let patterns: Vec<String> = commands
        .iter()
        .map(|c| match c.split_once(' ') {
            Some(_) => quote(c),
            None => format!("{c}\\ *"),
        })
        .collect();
    patterns.join("|")
}

fn double_quoted(text: &str) -> String {
    format!("\"{text}\"")
}

/// clap's bash script, its function renamed, behind one that completes what rocflow finds.
fn bash(script: &str) -> String {
    let static_script = script.replacen("_rocflow() {", "_rocflow_static() {", 1);
    let templates = positional_pattern(TEMPLATE_COMMANDS, double_quoted);
    format!(
        r#"{static_script}
_rocflow() {{
    # The words up to the cursor, split at spaces only (bash splits `sim:FILE` at the colon).
    local line="${{COMP_LINE:0:COMP_POINT}}"
    [[ -z $COMP_LINE ]] && line="${{COMP_WORDS[*]:0:COMP_CWORD}} ${{COMP_WORDS[COMP_CWORD]}}"
    local -a words
    read -ra words <<< "$line"
    local cur="" n=${{#words[@]}}
    [[ $line != *[[:space:]] ]] && cur="${{words[n-1]}}" && n=$((n - 1))
    local prev="${{words[n-1]}}" cmd1="${{words[1]}}" cmd2="${{words[2]}}"
    (( n < 2 )) && cmd1=""
    (( n < 3 )) && cmd2=""
    local word
    for word in "${{words[@]:1:n-1}}"; do
        # After `--`: the application's arguments.
        [[ $word == -- ]] && {{ _rocflow_static "$@"; return; }}
    done
    local kind=""
    case "$prev" in
        --pmc) kind=counters ;;
        --device) kind=devices ;;
    esac
    if [[ -z $kind && $cur != -* && $prev != -* ]]; then
        case "$cmd1 $cmd2" in
            {templates}) kind=templates ;;
            "{COUNTER_COMMAND}") kind=counters ;;
        esac
    fi
    [[ -z $kind ]] && {{ _rocflow_static "$@"; return; }}
    local IFS=$'\n'
    COMPREPLY=( $("${{words[0]/#\~/$HOME}}" __complete "$kind" "$cur" 2>/dev/null) )
    [[ $kind == templates ]] && COMPREPLY+=( $(compgen -f -- "$cur") )
    # bash completes the part after the word's last colon.
    if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
        local colon="${{cur%"${{cur##*:}}"}}" i
        for i in "${{!COMPREPLY[@]}}"; do COMPREPLY[i]="${{COMPREPLY[i]#"$colon"}}"; done
    fi
    if [[ ${{#COMPREPLY[@]}} -eq 1 && ${{COMPREPLY[0]}} == *[:/] ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}}
"#
    )
}

/// clap's zsh script, its function renamed, behind one that completes what rocflow finds
/// (the file's own function, `_rocflow`, is the one zsh calls).
fn zsh(script: &str) -> String {
    let static_script = script.replacen("\n_rocflow() {", "\n_rocflow_static() {", 1);
    let templates = positional_pattern(TEMPLATE_COMMANDS, double_quoted);
    let wrapper = format!(
        r#"
_rocflow() {{
    local cur="${{words[CURRENT]}}" prev="${{words[CURRENT-1]}}" kind=""
    local cmd1="${{words[2]}}" cmd2="${{words[3]}}"
    (( CURRENT <= 2 )) && cmd1=""
    (( CURRENT <= 3 )) && cmd2=""
    # After `--`: the application's arguments.
    local dashes=${{words[(i)--]}}
    (( dashes < CURRENT )) && {{ _rocflow_static "$@"; return }}
    case "$prev" in
        --pmc) kind=counters ;;
        --device) kind=devices ;;
    esac
    if [[ -z $kind && $cur != -* && $prev != -* ]]; then
        case "$cmd1 $cmd2" in
            ({templates}) kind=templates ;;
            ("{COUNTER_COMMAND}") kind=counters ;;
        esac
    fi
    [[ -z $kind ]] && {{ _rocflow_static "$@"; return }}
    local -a found open
    found=(${{(f)"$(${{words[1]}} __complete $kind "$cur" 2>/dev/null)"}})
    open=(${{(M)found:#*[:/]}})
    found=(${{found:#*[:/]}})
    (( $#found )) && compadd -a found
    (( $#open )) && compadd -S '' -a open
    [[ $kind == templates ]] && _files
    return 0
}}
"#
    );
    let tail = "\nif [ \"$funcstack[1]\" = \"_rocflow\" ]; then";
    match static_script.find(tail) {
        Some(at) => format!("{}{wrapper}{}", &static_script[..at], &static_script[at..]),
        None => format!("{static_script}{wrapper}"),
    }
}

/// clap's fish script, and what rocflow finds for the arguments that name templates,
/// counters and devices (fish offers these beside clap's own).
fn fish(script: &str, cli: &clap::Command) -> String {
    let mut out = script.to_string();
    out.push_str("\n# What rocflow finds: templates, counters, devices.\n");
    let ask = |kind: &str| format!("\"(rocflow __complete {kind} (commandline -ct))\"");
    let condition = |path: &[&str]| match path {
        [command] => format!("__fish_rocflow_using_subcommand {command}"),
        [command, sub] => format!(
            "__fish_rocflow_using_subcommand {command}; and __fish_seen_subcommand_from {sub}"
        ),
        _ => unreachable!("rocflow's commands are two deep at most"),
    };
    let mut lines = Vec::new();
    for (path, command) in commands(cli) {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        for (long, kind) in [("pmc", "counters"), ("device", "devices")] {
            if command.get_arguments().any(|a| a.get_long() == Some(long)) {
                lines.push(format!(
                    "complete -c rocflow -n \"{}\" -l {long} -x -a {}",
                    condition(&path),
                    ask(kind)
                ));
            }
        }
        let joined = path.join(" ");
        if TEMPLATE_COMMANDS.contains(&joined.as_str()) {
            lines.push(format!(
                "complete -c rocflow -n \"{}\" -a {}",
                condition(&path),
                ask("templates")
            ));
        } else if joined == COUNTER_COMMAND {
            lines.push(format!(
                "complete -c rocflow -n \"{}\" -x -a {}",
                condition(&path),
                ask("counters")
            ));
        }
    }
    out.push_str(&lines.join("\n"));
    out.push('\n');
    out
}

/// Every visible command under `cli`, with its path of names (`["counters", "show"]`).
fn commands(cli: &clap::Command) -> Vec<(Vec<String>, &clap::Command)> {
    let mut all = Vec::new();
    for command in cli.get_subcommands().filter(|c| !c.is_hide_set()) {
        let path = vec![command.get_name().to_string()];
        for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
            all.push((vec![path[0].clone(), sub.get_name().to_string()], sub));
        }
        all.push((path, command));
    }
    all
}

/// `rocflow __complete KIND [WORD]`, which the completion scripts call.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// What to list.
    #[arg(value_enum)]
    kind: Candidates,
    /// The word being completed: only what starts with it is listed.
    #[arg(default_value = "", allow_hyphen_values = true)]
    word: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Candidates {
    /// Template names: the shipped library's and those on ROCFLOW_PIPELINE_PATH.
    Templates,
    /// Counter names of the definitions found (as `rocflow counters list` finds them).
    Counters,
    /// `--device` values: `rocm`, `sim`, `sim:SCENARIO.toml`.
    Devices,
}

/// Prints the candidates for a word, one a line. What cannot be read is no candidate: a
/// completion never prints an error.
pub fn complete(args: CompleteArgs) -> Result<ExitCode> {
    let candidates: Vec<String> = match args.kind {
        Candidates::Templates => Library::from_env()
            .list()
            .into_iter()
            .map(|t| t.name)
            .collect(),
        Candidates::Counters => rocflow_counters::Definitions::load_default(None)
            .map(|defs| defs.counters().iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default(),
        Candidates::Devices => devices(&args.word),
    };
    let mut out = String::new();
    for candidate in candidates.iter().filter(|c| c.starts_with(&args.word)) {
        out.push_str(candidate);
        out.push('\n');
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The devices, and after `sim:` the scenario files (and directories) the word begins.
fn devices(word: &str) -> Vec<String> {
    let Some(path) = word.strip_prefix("sim:") else {
        return ["rocm", "sim", "sim:"].map(String::from).to_vec();
    };
    let (dir, _) = path.rsplit_once('/').unwrap_or(("", path));
    let shown_dir = if path.contains('/') {
        format!("{dir}/")
    } else {
        String::new()
    };
    let read = if path.contains('/') {
        Path::new(if dir.is_empty() { "/" } else { dir })
    } else {
        Path::new(".")
    };
    let mut found: Vec<String> = std::fs::read_dir(read)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let is_dir = e.path().is_dir();
            (is_dir || name.ends_with(".toml"))
                .then(|| format!("sim:{shown_dir}{name}{}", if is_dir { "/" } else { "" }))
        })
        .collect();
    found.sort();
    found
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write a page per command into DIR (rocflow.1, rocflow-run.1, …) instead of printing
    /// one page.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<PathBuf>,
    /// The command whose page to print (`run`, `counters list`); rocflow's own without one.
    #[arg(value_name = "COMMAND", num_args = 0..=2)]
    command: Vec<String>,
}

/// Prints a manual page in roff, or writes one page per command.
pub fn man(args: ManArgs, command: clap::Command) -> Result<ExitCode> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(Error::io(format!("creating {}", dir.display())))?;
            let mut pages: Vec<&clap::Command> = vec![&command];
            pages.extend(commands(&command).into_iter().map(|(_, c)| c));
            for page in pages {
                let man = clap_mangen::Man::new(page.clone());
                let path = dir.join(man.get_filename());
                let text = render(&man, page)?;
                crate::atomic::write(&path, &text)
                    .map_err(Error::io(format!("writing {}", path.display())))?;
            }
        }
        None => {
            let page = find(&command, &args.command)?;
            print(&render(&clap_mangen::Man::new(page.clone()), page)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The command `path` names under `cli`.
fn find<'a>(cli: &'a clap::Command, path: &[String]) -> Result<&'a clap::Command> {
    let mut command = cli;
    for name in path {
        command = command.find_subcommand(name).ok_or_else(|| {
            Error::user(
                crate::diag::Diagnostic::error(format!("`rocflow {name}` is no command"))
                    .hint("`rocflow --help` lists the commands"),
            )
        })?;
    }
    Ok(command)
}

/// A page: clap's sections, then examples, files and environment.
fn render(man: &clap_mangen::Man, command: &clap::Command) -> Result<String> {
    let mut page = Vec::new();
    man.render(&mut page)
        .map_err(Error::io("rendering the manual page"))?;
    let name = command.get_display_name().unwrap_or(command.get_name());
    page.extend_from_slice(super::manual::sections(name).as_bytes());
    Ok(String::from_utf8_lossy(&page).into_owned())
}
