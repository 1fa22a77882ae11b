//! rocprofv3's `--ompt-trace` categories as the OpenMP (OMPT) operations of rocprofiler-sdk
//! they trace. The grouping follows the OpenMP specification's callbacks: a category
//! traces the callbacks named after it, and `all` every one.

/// Each category with its operations (`rocprofiler_ompt_operation_t` names).
const CATEGORIES: &[(&str, &[&str])] = &[
    ("thread", &["thread_begin", "thread_end"]),
    (
        "parallel",
        &[
            "parallel_begin",
            "parallel_end",
            "implicit_task",
            "work",
            "masked",
            "dispatch",
        ],
    ),
    (
        "task",
        &[
            "task_create",
            "task_schedule",
            "dependences",
            "task_dependence",
        ],
    ),
    (
        "sync",
        &[
            "sync_region",
            "sync_region_wait",
            "reduction",
            "flush",
            "cancel",
        ],
    ),
    (
        "mutex",
        &[
            "mutex_acquire",
            "mutex_acquired",
            "mutex_released",
            "lock_init",
            "lock_destroy",
            "nest_lock",
        ],
    ),
    (
        "target",
        &["target_emi", "target_data_op_emi", "target_submit_emi"],
    ),
    (
        "device",
        &["device_initialize", "device_finalize", "device_load"],
    ),
    ("error", &["error"]),
];

/// The names rocprofv3 accepts, for messages.
pub fn names() -> String {
    let mut names: Vec<&str> = vec!["all"];
    names.extend(CATEGORIES.iter().map(|(name, _)| *name));
    names.join(", ")
}

/// The OMPT operations `categories` trace: `None` for every one (`all` among them), or the
/// first name that is no category.
pub fn operations(categories: &[String]) -> Result<Option<Vec<&'static str>>, String> {
    let mut operations = Vec::new();
    for category in categories {
        if category == "all" {
            return Ok(None);
        }
        let (_, ops) = (CATEGORIES.iter())
            .find(|(name, _)| name == category)
            .ok_or_else(|| category.clone())?;
        operations.extend(ops.iter().copied());
    }
    Ok(Some(operations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk::Domain;

    #[test]
    fn every_category_names_real_operations_once() {
        let mut seen = Vec::new();
        for (category, ops) in CATEGORIES {
            for op in *ops {
                assert!(
                    Domain::Ompt.operations().iter().any(|(_, name)| name == op),
                    "{category}: {op}"
                );
                assert!(!seen.contains(op), "{op} is in two categories");
                seen.push(*op);
            }
        }
    }

    #[test]
    fn categories_narrow_and_all_widens() {
        let of =
            |names: &[&str]| operations(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        assert_eq!(
            of(&["thread", "error"]),
            Ok(Some(vec!["thread_begin", "thread_end", "error"]))
        );
        assert_eq!(of(&["task", "all"]), Ok(None));
        assert_eq!(of(&["parallel", "threads"]), Err("threads".to_string()));
    }
}
