//! `plugin` as a pipeline declares it and the Plan holds it: its options, their schema,
//! its checks and its line in `rocflow explain`. What it does to records:
//! [`crate::transform`]'s `plugin` module.


use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json, json};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::diag::Step;
use crate::plan::PluginRef;
use crate::plugin::PluginTransform;
use crate::record::{Batch, wire_size};

use super::kind::{Check, Compiled, Declared};

#[derive(Debug, Deserialize, Serialize)]
pub struct Options {
    /// A name (`librocflow_plugin_NAME.so` on the plugin path) or a path.
    pub plugin: String,
    #[serde(default)]
    pub options: Map<String, Json>,
}

/// The plugin as found when the pipeline was compiled.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Plan {
    pub plugin: PluginRef,
    /// Handed to the plugin as JSON.
    pub options: Map<String, Json>,
}

impl Declared for Options {
    type Plan = Plan;

    fn schema() -> Json {
        json!({
            "description": "A transform from a plugin library: it sees each batch of records and returns those that go on, with the columns it adds.",
            "required": ["plugin"],
            "properties": {
                "plugin": { "$ref": "#/$defs/plugin" },
                "options": { "type": "object", "description": "Handed to the plugin as JSON." },
                "strict": {
                    "type": "boolean",
                    "description": "Stop the run when the plugin fails on a batch, instead of passing the batch on as it came and reporting the first failures."
                }
            }
        })
    }

    /// Finds the plugin and, if the compiler loads plugins, creates it with its options
    /// and runs it on a sample record of each kind it takes: a plugin that cannot work
    /// fails here, before any application starts. The columns it adds are known to the
    /// transforms after it; a plugin not loaded may add any.
    fn compile(&self, check: &mut impl Check) -> Option<Plan> {
        let (plugin, loaded) = check.plugin(&self.plugin)?;
        let plan = Plan {
            plugin,
            options: self.options.clone(),
        };
        let Some(loaded) = loaded else {
            check.add_unknown_columns();
            return Some(plan);
        };
        let mut instance = match PluginTransform::create(loaded, &self.options) {
            Ok(instance) => instance,
            Err(e) => {
                check.options_error(e.to_string());
                return None;
            }
        };
        for kind in check.kinds().to_vec() {
            let sample = Batch::decode(kind, &vec![0; wire_size(kind)]).expect("one record");
            let mut chunk = Chunk::new(0, sample);
            if let Err(e) = instance.apply(&mut chunk, &StreamMeta::default()) {
                let d = check.error(&[Step::Key("plugin")], e.to_string());
                d.notes.push(format!(
                    "validation runs a transform on a sample {} record",
                    kind.name()
                ));
                d.hint = Some("`records = [...]` chooses the kinds a transform takes".into());
                return None;
            }
            for extra in chunk.extra {
                if check.has_column(kind, &extra.name) {
                    let message = format!(
                        "the plugin adds `{}`, already a column of {} records",
                        extra.name,
                        kind.name()
                    );
                    check.error(&[Step::Key("plugin")], message);
                }
                let sample = extra.values.into_iter().next();
                check.add_column(kind, &extra.name, sample.unwrap_or(evalexpr::Value::Empty));
            }
        }
        Some(plan)
    }
}

impl Compiled for Plan {
    fn explain(&self) -> String {
        let mut text = self.plugin.to_string();
        if !self.options.is_empty() {
            text.push_str(&format!(", options {}", Json::Object(self.options.clone())));
        }
        text
    }
}
