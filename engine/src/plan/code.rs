//! What of a plan runs code besides rocflow's: plugins and commands. A plan read back from
//! a spool may come from anyone, so a replay leaves these out unless told to trust it.

use std::fmt;

use crate::plan::PostStep;

use super::{Plan, TransformOpPlan, Writer};

/// A part of a plan that runs code, by its name in the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Code {
    /// A transform a plugin library does.
    Transform(String),
    /// A sink a plugin library writes.
    Sink(String),
    /// A post-step that runs a command.
    Command(String),
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Code::Transform(name) => write!(f, "plugin transform `{name}`"),
            Code::Sink(name) => write!(f, "plugin sink `{name}`"),
            Code::Command(name) => write!(f, "command post-step `{name}`"),
        }
    }
}

impl Plan {
    /// The plan without what runs code (its records reach the other sinks as before), and
    /// what was left out.
    pub fn without_code(mut self) -> (Plan, Vec<Code>) {
        let mut left_out = Vec::new();
        // Routes name transforms by index: each kept one's new index, by its old one.
        let mut renumbered = Vec::with_capacity(self.stages.transforms.len());
        let mut next = 0;
        leave_out(&mut self.stages.transforms, &mut left_out, |t| {
            let code =
                matches!(t.op, TransformOpPlan::Plugin(_)).then(|| Code::Transform(t.name.clone()));
            renumbered.push(code.is_none().then(|| {
                next += 1;
                next - 1
            }));
            code
        });
        leave_out(&mut self.sinks, &mut left_out, |s| {
            matches!(s.writer, Writer::Plugin { .. }).then(|| Code::Sink(s.name.clone()))
        });
        leave_out(&mut self.posts, &mut left_out, |p| {
            matches!(p.step, PostStep::Command { .. }).then(|| Code::Command(p.name.clone()))
        });
        let sinks = &self.sinks;
        self.stages
            .routes
            .retain(|r| sinks.iter().any(|s| s.name == r.sink));
        for route in &mut self.stages.routes {
            route.transforms = (route.transforms.iter())
                .filter_map(|&t| renumbered.get(t).copied().flatten())
                .collect();
        }
        (self, left_out)
    }
}

/// Removes the entries `code` says run code, adding what it says to `left_out`.
fn leave_out<T>(
    entries: &mut Vec<T>,
    left_out: &mut Vec<Code>,
    mut code: impl FnMut(&T) -> Option<Code>,
) {
    entries.retain(|entry| match code(entry) {
        Some(code) => {
            left_out.push(code);
            false
        }
        None => true,
    });
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::diag::SourceFile;
    use crate::pipeline;
    use crate::plan::PluginRef;

    #[test]
    fn plugins_and_commands_are_left_out_and_routes_renumbered() {
        let toml = r#"
[[context]]
name = "t"
tracing = ["kernel_dispatch"]
[[transform]]
name = "plugged"
kind = "filter"
records = ["kernel_dispatch"]
predicate = "true"
[[transform]]
name = "long"
kind = "filter"
records = ["kernel_dispatch"]
predicate = "duration_ns > 10"
[[sink]]
name = "tables"
kind = "csv"
path = "out"
[[post]]
name = "notify"
kind = "command"
argv = ["true"]
[[post]]
name = "stats"
kind = "summary"
"#;
        let file = SourceFile::new("p.toml", toml);
        let options = pipeline::Options::default();
        let mut plan = pipeline::compile_text(Path::new("p.toml"), file, &options)
            .unwrap()
            .plan;
        // A plugin transform and sink as a recorded plan names them (compiling would load
        // the library).
        let plugin = PluginRef {
            name: "x".into(),
            library: "/nowhere/librocflow_plugin_x.so".into(),
        };
        plan.stages.transforms[0].op =
            TransformOpPlan::Plugin(crate::plan::transform::plugin::Plan {
                plugin: plugin.clone(),
                options: Default::default(),
            });
        let mut sink = plan.sinks[0].clone();
        sink.name = "metrics".into();
        sink.writer = Writer::Plugin {
            plugin,
            options: Default::default(),
        };
        let mut route = plan.stages.routes[0].clone();
        route.sink = "metrics".into();
        plan.sinks.push(sink);
        plan.stages.routes.push(route);

        let (kept, left_out) = plan.without_code();
        assert_eq!(
            left_out,
            [
                Code::Transform("plugged".into()),
                Code::Sink("metrics".into()),
                Code::Command("notify".into()),
            ]
        );
        assert_eq!(kept.stages.transforms.len(), 1);
        assert_eq!(kept.stages.transforms[0].name, "long");
        assert_eq!(kept.stages.routes.len(), 1);
        assert_eq!(kept.stages.routes[0].sink, "tables");
        assert_eq!(kept.stages.routes[0].transforms, [0]);
        assert_eq!(kept.posts.len(), 1);
        assert_eq!(kept.posts[0].name, "stats");
    }
}
