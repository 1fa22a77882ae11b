//! What a run on the simulated device holds, derived from its scenario file alone (never
//! from rocflow's outputs), and what each of rocflow's outputs says it holds, in one form:
//! a [`Tally`]. The matrix test holds every output of every combination to the truth.
//!
//! The simulated device replays its scenario on each of `threads` threads, `iterations`
//! times: a ROCTx range around one launch and dispatch of every kernel, every copy (a
//! `hipMemcpy` call and the copy), every allocation (`hipMalloc` and `hipFree` calls, an
//! allocate and a free) and every `[[call]]` `count` times. Counter values are the device's
//! function of the scenario's seed, the dispatch and the counter instance.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rocflow_core::sdk::COUNTER_DIMENSIONS;
use rocflow_counters::Definitions;
use rocflow_counters::expr::{Dimension, Instance, Tensor};

use crate::cxxfilt::demangle;
use crate::{csv, duckdb, otf2_print, sqlite_rows};

pub mod device;
pub mod graphs;
pub mod series;
pub mod spm;

/// What an output says a run held, summed over its processes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    /// Per kernel (named as `c++filt` names it): its dispatches.
    pub kernels: BTreeMap<String, u64>,
    /// Per kernel: the GPU time of its dispatches, in ns.
    pub kernel_ns: BTreeMap<String, u64>,
    /// Per API function: its calls.
    pub api: BTreeMap<String, u64>,
    /// Per copy direction (`HOST_TO_DEVICE`, …): its copies.
    pub copies: BTreeMap<String, u64>,
    /// Per copy direction: the bytes copied.
    pub copy_bytes: BTreeMap<String, u64>,
    /// Per allocation operation (`ALLOCATE`, `FREE`): its calls.
    pub allocations: BTreeMap<String, u64>,
    /// Per ROCTx range message: its ranges.
    pub markers: BTreeMap<String, u64>,
    /// Per kernel and counter: the dispatches with a value, and the sum of the values.
    pub counters: BTreeMap<(String, String), (u64, f64)>,
    /// PC samples.
    pub pc_samples: u64,
    /// Per KFD tracing domain: its events.
    pub kfd: BTreeMap<String, u64>,
}

/// A part of a [`Tally`], for outputs that show only some.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Kernels,
    KernelTime,
    Api,
    Copies,
    CopyBytes,
    Allocations,
    Markers,
    Counters,
    PcSamples,
    Kfd,
}

impl Part {
    pub const ALL: [Part; 10] = [
        Part::Kernels,
        Part::KernelTime,
        Part::Api,
        Part::Copies,
        Part::CopyBytes,
        Part::Allocations,
        Part::Markers,
        Part::Counters,
        Part::PcSamples,
        Part::Kfd,
    ];
}

impl Tally {
    /// Adds `other`'s counts to these: the tally of two outputs' records together, such
    /// as the databases of a run's processes.
    pub fn add(&mut self, other: Tally) {
        fn sum<K: Ord>(into: &mut BTreeMap<K, u64>, from: BTreeMap<K, u64>) {
            for (key, n) in from {
                *into.entry(key).or_default() += n;
            }
        }
        sum(&mut self.kernels, other.kernels);
        sum(&mut self.kernel_ns, other.kernel_ns);
        sum(&mut self.api, other.api);
        sum(&mut self.copies, other.copies);
        sum(&mut self.copy_bytes, other.copy_bytes);
        sum(&mut self.allocations, other.allocations);
        sum(&mut self.markers, other.markers);
        for (key, (n, total)) in other.counters {
            let entry = self.counters.entry(key).or_default();
            entry.0 += n;
            entry.1 += total;
        }
        self.pc_samples += other.pc_samples;
        sum(&mut self.kfd, other.kfd);
    }

    /// The differences between `self` (the truth) and `seen`, in the `parts` an output
    /// shows: empty when they agree. Counter sums agree within the relative `within`:
    /// derived counters are sums of quotients added in any order, and some formats write
    /// values to a fixed number of decimals.
    pub fn differences(&self, seen: &Tally, parts: &[Part], within: f64) -> Vec<String> {
        fn compare<K: std::fmt::Debug + Ord, V: std::fmt::Debug + PartialEq>(
            part: Part,
            want: &BTreeMap<K, V>,
            got: &BTreeMap<K, V>,
            out: &mut Vec<String>,
        ) {
            let keys: BTreeSet<&K> = want.keys().chain(got.keys()).collect();
            for key in keys {
                if want.get(key) != got.get(key) {
                    out.push(format!(
                        "{part:?} {key:?}: want {:?}, got {:?}",
                        want.get(key),
                        got.get(key)
                    ));
                }
            }
        }
        let mut out = Vec::new();
        for &part in parts {
            match part {
                Part::Kernels => compare(part, &self.kernels, &seen.kernels, &mut out),
                Part::KernelTime => compare(part, &self.kernel_ns, &seen.kernel_ns, &mut out),
                Part::Api => compare(part, &self.api, &seen.api, &mut out),
                Part::Copies => compare(part, &self.copies, &seen.copies, &mut out),
                Part::CopyBytes => compare(part, &self.copy_bytes, &seen.copy_bytes, &mut out),
                Part::Allocations => compare(part, &self.allocations, &seen.allocations, &mut out),
                Part::Markers => compare(part, &self.markers, &seen.markers, &mut out),
                Part::Kfd => compare(part, &self.kfd, &seen.kfd, &mut out),
                Part::PcSamples if self.pc_samples != seen.pc_samples => out.push(format!(
                    "PcSamples: want {}, got {}",
                    self.pc_samples, seen.pc_samples
                )),
                Part::PcSamples => {}
                Part::Counters => {
                    let round = |m: &BTreeMap<(String, String), (u64, f64)>| {
                        m.iter()
                            .map(|(k, &(n, sum))| (k.clone(), (n, Close(sum, within))))
                            .collect::<BTreeMap<_, _>>()
                    };
                    compare(
                        part,
                        &round(&self.counters),
                        &round(&seen.counters),
                        &mut out,
                    );
                }
            }
        }
        out
    }
}

/// A float that equals another within a relative tolerance (the second field).
#[derive(Debug, Clone, Copy)]
struct Close(f64, f64);

impl PartialEq for Close {
    fn eq(&self, other: &Close) -> bool {
        (self.0 - other.0).abs() <= self.1 * self.0.abs().max(other.0.abs()).max(1.0)
    }
}

/// A simulated device's scenario, as its file says.
#[derive(Debug)]
pub struct Scenario {
    pub seed: u64,
    pub threads: u64,
    pub iterations: u64,
    /// The ROCTx range around each iteration, if there is one: its message.
    pub marker: Option<String>,
    pub agents: Vec<Agent>,
    /// The counter definitions the device computes derived counters by, with the device's
    /// own reading of the scenario (its agents' properties), where the scenario names
    /// definitions.
    pub defined: Option<(rocflow_core::scenario::Scenario, Definitions)>,
    pub kernels: Vec<Kernel>,
    pub copies: Vec<Copy>,
    /// Per allocation: its bytes, allocated and freed once an iteration.
    pub allocations: Vec<u64>,
    /// How many of them are of pinned host memory (`hipHostMalloc`, not `hipMalloc`).
    pub host_allocations: u64,
    /// Per `[[call]]`: its domain, function and count per iteration.
    pub calls: Vec<(String, String, u64)>,
    /// Per `[[kfd]]`: its domain and events per iteration.
    pub kfd: Vec<(String, u64)>,
}

#[derive(Debug)]
pub struct Agent {
    /// Its gfx name (`gfx942`).
    pub name: String,
    /// Whether it takes PC samples (the scenario lists how).
    pub pc_sampling: bool,
    /// Its counters: those the scenario lists, then, where it names counter definitions,
    /// those the simulated device takes from them.
    pub counters: Vec<Counter>,
}

/// A counter of a simulated GPU.
#[derive(Debug)]
pub struct Counter {
    pub name: String,
    /// The device's id of it: `(gpu + 1) * 256` plus its place in the scenario's list, or
    /// the definitions' counters' own range.
    pub handle: u64,
    /// The SDK's dimension id and size of each of its dimensions.
    pub dimensions: Vec<(u64, u64)>,
    /// Computed by the definitions' expression from other counters' values.
    pub derived: bool,
}

#[derive(Debug)]
pub struct Kernel {
    /// As `c++filt` demangles it.
    pub name: String,
    /// As the scenario (the code object) gives it.
    pub mangled: String,
    pub agent: usize,
    pub duration_ns: u64,
    pub pc_samples: u64,
    /// Work-items in each dimension, of the grid and of a workgroup.
    pub grid: [u64; 3],
    pub workgroup: [u64; 3],
    /// Its resources: LDS and scratch bytes, vector and scalar registers.
    pub lds_bytes: u64,
    pub scratch_bytes: u64,
    pub vgpr: u64,
    pub sgpr: u64,
    /// The HIP graph it is a node of, if any: launched with its graph's other nodes.
    pub graph: Option<u64>,
}

/// One of the copies of each iteration.
#[derive(Debug)]
pub struct Copy {
    /// As the outputs name it (`HOST_TO_DEVICE`, …).
    pub direction: String,
    pub bytes: u64,
    pub duration_ns: u64,
}

impl Scenario {
    pub fn read(path: &Path) -> Scenario {
        let text = std::fs::read_to_string(path).unwrap();
        let mut scenario = Scenario::of(&toml::from_str(&text).unwrap());
        let device = rocflow_core::scenario::Scenario::read(path).unwrap();
        let Some(definitions) = rocflow_core::agent_counters::definitions(&device).unwrap() else {
            return scenario;
        };
        for (gpu, agent) in scenario.agents.iter_mut().enumerate() {
            let all =
                rocflow_core::agent_counters::agent_counters(&device, gpu, Some(&definitions));
            agent.counters = (all.into_iter())
                .map(|c| Counter {
                    handle: c.handle,
                    dimensions: (c.dimensions.iter())
                        .map(|&(id, size)| (id, u64::from(size)))
                        .collect(),
                    derived: c.kind != rocflow_core::agent_counters::Kind::Hardware,
                    name: c.name,
                })
                .collect();
        }
        scenario.defined = Some((device, definitions));
        scenario
    }

    /// The scenario a parsed scenario file describes.
    pub fn of(doc: &toml::Value) -> Scenario {
        let list = |key: &str| {
            doc.get(key)
                .and_then(|v| v.as_array())
                .cloned()
                .unwrap_or_default()
        };
        let int = |v: &toml::Value, key: &str, default: i64| {
            v.get(key).and_then(|x| x.as_integer()).unwrap_or(default) as u64
        };
        let settings = &doc["scenario"];
        let agents = list("agent")
            .iter()
            .enumerate()
            .map(|(gpu, a)| Agent {
                name: a["name"].as_str().unwrap().to_owned(),
                pc_sampling: a.get("pc_sampling").is_some(),
                counters: (a.get("counter").and_then(|c| c.as_array()).cloned())
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let dims = (c.get("dimensions").and_then(|d| d.as_array()).cloned())
                            .unwrap_or_default()
                            .iter()
                            .map(|d| {
                                let name = d[0].as_str().unwrap();
                                let id = (COUNTER_DIMENSIONS.iter())
                                    .position(|n| *n == name)
                                    .unwrap();
                                (id as u64, d[1].as_integer().unwrap() as u64)
                            })
                            .collect();
                        Counter {
                            name: c["name"].as_str().unwrap().to_owned(),
                            handle: (gpu as u64 + 1) * 256 + i as u64,
                            dimensions: dims,
                            derived: false,
                        }
                    })
                    .collect(),
            })
            .collect();
        let mangled: Vec<String> = (list("kernel").iter())
            .map(|k| k["name"].as_str().unwrap().to_owned())
            .collect();
        let names = demangle(&mangled);
        let dim3 = |v: &toml::Value, key: &str| {
            let values = v[key].as_array().unwrap();
            [0, 1, 2].map(|i| values[i].as_integer().unwrap() as u64)
        };
        let kernels = (list("kernel").iter().zip(names))
            .map(|(k, name)| Kernel {
                name,
                mangled: k["name"].as_str().unwrap().to_owned(),
                agent: int(k, "agent", 0) as usize,
                duration_ns: int(k, "duration_ns", 0),
                pc_samples: int(k, "pc_samples", 0),
                grid: dim3(k, "grid"),
                workgroup: dim3(k, "workgroup"),
                lds_bytes: int(k, "lds_bytes", 0),
                scratch_bytes: int(k, "scratch_bytes", 0),
                vgpr: int(k, "vgpr", 0),
                sgpr: int(k, "sgpr", 0),
                graph: k
                    .get("graph")
                    .and_then(|g| g.as_integer())
                    .map(|g| g as u64),
            })
            .collect();
        Scenario {
            seed: int(settings, "seed", 0),
            threads: int(settings, "threads", 1),
            iterations: int(settings, "iterations", 1),
            marker: settings
                .get("marker_ranges")
                .and_then(|m| m.as_bool())
                .filter(|&on| on)
                .map(|_| {
                    let message = settings.get("marker_message").and_then(|m| m.as_str());
                    message.unwrap_or_default().to_owned()
                }),
            agents,
            defined: None,
            kernels,
            copies: (list("copy").iter())
                .map(|c| Copy {
                    direction: c["direction"].as_str().unwrap().to_ascii_uppercase(),
                    bytes: int(c, "bytes", 0),
                    duration_ns: int(c, "duration_ns", 0),
                })
                .collect(),
            allocations: (list("allocation").iter())
                .map(|a| int(a, "bytes", 0))
                .collect(),
            host_allocations: (list("allocation").iter())
                .filter(|a| a.get("host").and_then(|h| h.as_bool()) == Some(true))
                .count() as u64,
            calls: (list("call").iter())
                .map(|c| {
                    (
                        c["domain"].as_str().unwrap().to_owned(),
                        c["function"].as_str().unwrap().to_owned(),
                        int(c, "count", 1),
                    )
                })
                .collect(),
            kfd: (list("kfd").iter())
                .map(|k| (k["domain"].as_str().unwrap().to_owned(), int(k, "count", 1)))
                .collect(),
        }
    }

    /// Records of each kind one process delivers when every kind is traced; a kind
    /// without records is left out.
    pub fn records_per_process(&self) -> BTreeMap<String, u64> {
        let n = self.repeats();
        let calls: u64 = self.calls().iter().map(|c| c.2).sum();
        let counts = [
            ("kernel_dispatch", n * self.kernels.len() as u64),
            ("api", n * calls),
            ("memory_copy", n * self.copies.len() as u64),
            ("memory_allocation", n * 2 * self.allocations.len() as u64),
            ("marker", n * u64::from(self.marker.is_some())),
        ];
        (counts.into_iter())
            .filter(|(_, count)| *count > 0)
            .map(|(kind, count)| (kind.to_owned(), count))
            .collect()
    }

    /// How many times each thread's work repeats in a process.
    pub fn repeats(&self) -> u64 {
        self.threads * self.iterations
    }

    /// The API calls of one iteration, per domain and function.
    pub fn calls(&self) -> Vec<(&str, &str, u64)> {
        let kernels = self.kernels.iter().filter(|k| k.graph.is_none()).count() as u64;
        let host = self.host_allocations;
        let allocations = self.allocations.len() as u64 - host;
        let mut calls = vec![
            ("hip_runtime_api", "hipLaunchKernel", kernels),
            (
                "hip_runtime_api",
                "hipGraphLaunch",
                self.graphs().len() as u64,
            ),
            ("hip_graph", "EXEC_LAUNCH", self.graphs().len() as u64),
            ("hip_runtime_api", "hipMemcpy", self.copies.len() as u64),
            ("hip_runtime_api", "hipMalloc", allocations),
            ("hip_runtime_api", "hipFree", allocations),
            ("hip_runtime_api", "hipHostMalloc", host),
            ("hip_runtime_api", "hipHostFree", host),
        ];
        calls.extend((self.calls.iter()).map(|(d, f, n)| (d.as_str(), f.as_str(), *n)));
        calls.retain(|c| c.2 > 0);
        calls
    }

    /// What `processes` processes that each replay the scenario hold of what `collects`
    /// names. Counter values need to know which dispatch ran which kernel, which the
    /// device decides as threads interleave: `dispatches` gives it, per process.
    pub fn truth(&self, collects: &Collects, processes: u64, dispatches: &Dispatches) -> Tally {
        let n = self.repeats() * processes;
        let mut tally = Tally::default();
        if collects.dispatches {
            for k in (self.kernels.iter()).filter(|k| k.duration_ns >= collects.min_kernel_ns) {
                let name = collects.name(k).to_owned();
                *tally.kernels.entry(name.clone()).or_default() += n;
                *tally.kernel_ns.entry(name).or_default() += n * k.duration_ns;
            }
        }
        for (domain, function, count) in self.calls() {
            if collects.traces(domain, function) {
                *tally.api.entry(function.to_owned()).or_default() += n * count;
            }
        }
        if collects.copies {
            for copy in &self.copies {
                let direction = &copy.direction;
                *tally.copies.entry(direction.clone()).or_default() += n;
                *tally.copy_bytes.entry(direction.clone()).or_default() += n * copy.bytes;
            }
        }
        if collects.allocations && !self.allocations.is_empty() {
            for operation in ["ALLOCATE", "FREE"] {
                let calls = n * self.allocations.len() as u64;
                tally.allocations.insert(operation.into(), calls);
            }
        }
        if collects.pc_samples {
            let sampled = self
                .kernels
                .iter()
                .filter(|k| self.agents[k.agent].pc_sampling);
            tally.pc_samples = n * sampled.map(|k| k.pc_samples).sum::<u64>();
        }
        if let (true, Some(message)) = (collects.markers, &self.marker) {
            tally.markers.insert(message.clone(), n);
        }
        if collects.kfd {
            for (domain, count) in &self.kfd {
                *tally.kfd.entry(domain.clone()).or_default() += n * count;
            }
        }
        for (id, k) in dispatches.values().flatten() {
            let Some(kernel) = (self.kernels.iter()).find(|x| collects.name(x) == k) else {
                continue;
            };
            if !collects.counted(&kernel.name) {
                continue;
            }
            for (name, value) in self.counter_values(collects, kernel.agent, *id) {
                let entry = tally.counters.entry((k.clone(), name)).or_default();
                entry.0 += 1;
                entry.1 += value;
            }
        }
        tally
    }

    /// The values of the counters `collects` names that dispatch `id` on GPU `gpu` has,
    /// each summed over its instances, then the pipeline's derived ones.
    fn counter_values(&self, collects: &Collects, gpu: usize, id: u64) -> Vec<(String, f64)> {
        let mut values: Vec<(String, f64)> = (collects.counters.iter())
            .filter_map(|name| Some((name.to_string(), self.dispatch_counter(gpu, name, id)?)))
            .collect();
        for (name, numerator, denominator) in &collects.ratios {
            let get = |n: &str| values.iter().find(|(v, _)| v == n).map(|v| v.1);
            if let (Some(a), Some(b)) = (get(numerator), get(denominator)) {
                values.push((name.to_string(), a / b));
            }
        }
        values
    }

    /// The kernel of the scenario named `name`, demangled or as the code object names it.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        (self.kernels.iter()).find(|k| k.name == name || k.mangled == name)
    }

    /// GPU `gpu`'s counter `name`, if it has one.
    pub fn counter(&self, gpu: usize, name: &str) -> Option<&Counter> {
        self.agents[gpu].counters.iter().find(|c| c.name == name)
    }

    /// The id the simulated device gives counter `name` of GPU `gpu` (as the SDK's
    /// counter handle).
    pub fn counter_handle(&self, gpu: usize, name: &str) -> Option<u64> {
        Some(self.counter(gpu, name)?.handle)
    }

    /// The coordinates (in the SDK's dimension order) of each instance of counter `name`
    /// of GPU `gpu`, the last dimension the scenario lists fastest; none if it has no such
    /// counter.
    pub fn instances(&self, gpu: usize, name: &str) -> Vec<[u16; 7]> {
        let Some(counter) = self.counter(gpu, name) else {
            return Vec::new();
        };
        let dims = &counter.dimensions;
        let instances: u64 = dims.iter().map(|d| d.1).product();
        (0..instances)
            .map(|instance| {
                let mut coordinates = [0u16; 7];
                let mut rest = instance;
                for &(dim, size) in dims.iter().rev() {
                    coordinates[dim as usize] = (rest % size) as u16;
                    rest /= size;
                }
                coordinates
            })
            .collect()
    }

    /// The value the device gives counter `name` of GPU `gpu` in dispatch `id` at
    /// `coordinates`, if the GPU has that counter.
    pub fn counter_value(
        &self,
        gpu: usize,
        name: &str,
        id: u64,
        coordinates: [u16; 7],
    ) -> Option<f64> {
        let counter = self.counter(gpu, name)?;
        if !counter.derived {
            return Some(rocflow_sim::counter_value(
                self.seed,
                id,
                counter.handle,
                coordinates,
            ));
        }
        let value = self.derived_value(gpu, name, id)?;
        let at = |i: &Instance| Dimension::ALL.map(|d| i.coordinates.get(d) as u16);
        (value.instances().iter())
            .find(|i| at(i) == coordinates)
            .map(|i| i.value)
    }

    /// Derived counter `name` of GPU `gpu` in dispatch `id`: its expression, as the
    /// definitions write it, over the values the device gives its inputs.
    fn derived_value(&self, gpu: usize, name: &str, id: u64) -> Option<Tensor> {
        let (device, definitions) = self.defined.as_ref()?;
        let agent = &device.agents[gpu];
        rocflow_core::agent_counters::evaluate(definitions, agent, name, &mut |input| {
            let counter = self.counter(gpu, input)?;
            let shape: Vec<(Dimension, u32)> = (counter.dimensions.iter())
                .map(|&(d, size)| (Dimension::ALL[d as usize], size as u32))
                .collect();
            let values: Vec<f64> = (self.instances(gpu, input).into_iter())
                .map(|c| rocflow_sim::counter_value(self.seed, id, counter.handle, c))
                .collect();
            Some(Tensor::from_shape(&shape, &values))
        })
    }

    /// Counter `name` of GPU `gpu` in dispatch `id`, summed over its instances, if the GPU
    /// has it.
    pub fn dispatch_counter(&self, gpu: usize, name: &str, id: u64) -> Option<f64> {
        let counter = self.counter(gpu, name)?;
        if counter.derived {
            return Some(self.derived_value(gpu, name, id)?.values().iter().sum());
        }
        let values = self.instances(gpu, name).into_iter();
        Some(
            values
                .map(|c| rocflow_sim::counter_value(self.seed, id, counter.handle, c))
                .sum(),
        )
    }

    /// Counter samples (a value per instance) that one dispatch of each kernel whose name
    /// `kernels` (a regex) matches gives of the counters `names` its GPU has.
    pub fn samples_per_iteration(&self, kernels: &str, names: &[&str]) -> u64 {
        let kernels = regex::Regex::new(kernels).unwrap();
        (self.kernels.iter())
            .filter(|k| kernels.is_match(&k.name))
            .flat_map(|k| names.iter().map(|name| self.instances(k.agent, name).len()))
            .sum::<usize>() as u64
    }

    /// Counter samples one process delivers when each dispatch collects the counters
    /// `names` that its GPU has.
    pub fn counter_samples_per_process(&self, names: &[&str]) -> u64 {
        self.repeats() * self.samples_per_iteration("", names)
    }

    /// Fails unless the record tables of rocflow's CSV or Parquet sink (`table` gives a
    /// kind's rows, each column as text) hold what the scenario makes, row by row: each
    /// dispatch's kernel (one of the scenario's, named either way), duration, grid,
    /// workgroup and resources; each copy's bytes and duration, a copy's of its direction;
    /// each allocation's bytes; each ROCTx range's message; each counter sample's counter
    /// id and value (the device's, of its dispatch and coordinates, or their sum or ratio
    /// where `collects` says so) and each dispatch's instances of a counter (or the one
    /// value of a sum or ratio); each PC sample's dispatch, on a GPU that samples, with the
    /// sample inside it, and each dispatch's samples. How many rows there are is a
    /// [`Tally`]'s to check: no rows, nothing to fail.
    pub fn assert_fits(&self, collects: &Collects, table: impl Fn(&str) -> Rows) {
        let misfits = self.misfits(collects, table);
        let said: Vec<String> = (misfits.iter())
            .map(|(table, rows)| {
                let some: Vec<&str> = rows.iter().take(3).map(String::as_str).collect();
                format!(
                    "{} rows of {table}, such as:\n{}",
                    rows.len(),
                    some.join("\n")
                )
            })
            .collect();
        assert!(misfits.is_empty(), "{}", said.join("\n"));
    }

    /// What [`Scenario::assert_fits`] fails on, per table, each row said.
    pub fn misfits(
        &self,
        collects: &Collects,
        table: impl Fn(&str) -> Rows,
    ) -> BTreeMap<&str, Vec<String>> {
        let num = |row: &BTreeMap<String, String>, key: &str| -> u64 {
            let text = row
                .get(key)
                .unwrap_or_else(|| panic!("no column {key} in {row:?}"));
            text.parse::<f64>()
                .unwrap_or_else(|_| panic!("{key} = {text:?}")) as u64
        };
        let mut out: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut misfit = |table, row: String| out.entry(table).or_default().push(row);
        // Per process and dispatch id: its kernel, start and end.
        let mut dispatches: BTreeMap<(u64, u64), (&Kernel, u64, u64)> = BTreeMap::new();
        const RESOURCES: [&str; 10] = [
            "grid_x",
            "grid_y",
            "grid_z",
            "workgroup_x",
            "workgroup_y",
            "workgroup_z",
            "lds_bytes",
            "scratch_bytes",
            "vgpr_count",
            "sgpr_count",
        ];
        for row in table("kernel_dispatch") {
            let (pid, id) = (num(&row, "pid"), num(&row, "dispatch_id"));
            let name = &row["kernel_name"];
            let Some(kernel) = (self.kernels.iter()).find(|k| collects.name(k) == name) else {
                misfit(
                    "kernel_dispatch",
                    format!(
                        "dispatch {id} of process {pid}: {name:?} is no kernel of the scenario"
                    ),
                );
                continue;
            };
            let (start, end) = (num(&row, "start_ns"), num(&row, "end_ns"));
            let durations = [end - start, num(&row, "duration_ns")];
            if durations != [kernel.duration_ns; 2] {
                misfit(
                    "kernel_dispatch",
                    format!(
                        "dispatch {id} of process {pid} ({name}): lasts {durations:?} ns (end - start, duration_ns), want {}",
                        kernel.duration_ns
                    ),
                );
            }
            let got = RESOURCES.map(|column| num(&row, column));
            let [g, w] = [kernel.grid, kernel.workgroup];
            let want = [
                g[0],
                g[1],
                g[2],
                w[0],
                w[1],
                w[2],
                kernel.lds_bytes,
                kernel.scratch_bytes,
                kernel.vgpr,
                kernel.sgpr,
            ];
            if got != want {
                misfit(
                    "kernel_dispatch",
                    format!(
                        "dispatch {id} of process {pid} ({name}): {RESOURCES:?} are {got:?}, want {want:?}"
                    ),
                );
            }
            dispatches.insert((pid, id), (kernel, start, end));
        }
        for row in table("memory_copy") {
            let direction = &row["direction"];
            let (bytes, ns) = (
                num(&row, "bytes"),
                num(&row, "end_ns") - num(&row, "start_ns"),
            );
            let copy = (self.copies.iter()).find(|c| c.direction == *direction);
            if copy.is_none_or(|c| (c.bytes, c.duration_ns) != (bytes, ns)) {
                misfit(
                    "memory_copy",
                    format!(
                        "a {direction} copy of {bytes} bytes in {ns} ns; the scenario's: {copy:?}"
                    ),
                );
            }
        }
        for row in table("memory_allocation") {
            let bytes = num(&row, "bytes");
            if !self.allocations.contains(&bytes) {
                let operation = &row["operation"];
                misfit(
                    "memory_allocation",
                    format!("{operation} of {bytes} bytes: no allocation of the scenario"),
                );
            }
        }
        for row in table("marker") {
            if self.marker.as_ref() != Some(&row["message"]) {
                misfit(
                    "marker",
                    format!("a range {:?}, want {:?}", row["message"], self.marker),
                );
            }
        }
        // Per process, dispatch and counter: the coordinates of its values.
        let mut values: BTreeMap<(u64, u64, String), Vec<[u16; 7]>> = BTreeMap::new();
        for row in table("counter_sample") {
            let (pid, id, name) = (num(&row, "pid"), num(&row, "dispatch_id"), &row["counter"]);
            let Some(&(kernel, ..)) = dispatches.get(&(pid, id)) else {
                misfit(
                    "counter_sample",
                    format!(
                        "{name} of dispatch {id} of process {pid}, which is not a dispatch the run traced"
                    ),
                );
                continue;
            };
            let coordinates = crate::COORDINATES.map(|c| num(&row, c) as u16);
            let gpu = kernel.agent;
            let ratio = collects.ratios.iter().find(|r| r.0 == name);
            // A derived counter's id is rocflow's, not the device's.
            let (want_id, want) = match ratio {
                Some(&(_, a, b)) => {
                    let sums = self
                        .dispatch_counter(gpu, a, id)
                        .zip(self.dispatch_counter(gpu, b, id));
                    (None, sums.map(|(a, b)| a / b))
                }
                None if collects.summed => (
                    self.counter_handle(gpu, name),
                    self.dispatch_counter(gpu, name, id),
                ),
                None => (
                    self.counter_handle(gpu, name),
                    self.counter_value(gpu, name, id, coordinates),
                ),
            };
            let got_id = want_id.map(|_| num(&row, "counter_id"));
            let got = row["value"].parse::<f64>().ok();
            let close = got
                .zip(want)
                .is_some_and(|(g, w)| Close(g, 1e-12) == Close(w, 1e-12));
            if got_id != want_id || !close {
                misfit(
                    "counter_sample",
                    format!(
                        "{name} of dispatch {id} of process {pid} at {coordinates:?}: id and value {:?}, want {:?}",
                        (got_id, got),
                        (want_id, want)
                    ),
                );
            }
            let key = (pid, id, name.clone());
            values.entry(key).or_default().push(coordinates);
        }
        for ((pid, id, name), mut coordinates) in values {
            let gpu = dispatches[&(pid, id)].0.agent;
            coordinates.sort();
            let derived = collects.ratios.iter().any(|r| r.0 == name);
            let mut want = match derived || collects.summed {
                true => vec![[0; 7]],
                false => self.instances(gpu, &name),
            };
            want.sort();
            if coordinates != want {
                misfit(
                    "counter_sample",
                    format!(
                        "{name} of dispatch {id} of process {pid}: values at {coordinates:?}, want one at each of {want:?}"
                    ),
                );
            }
        }
        let mut samples: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for row in table("pc_sample") {
            let (pid, id, at) = (
                num(&row, "pid"),
                num(&row, "dispatch_id"),
                num(&row, "timestamp_ns"),
            );
            let Some(&(kernel, start, end)) = dispatches.get(&(pid, id)) else {
                misfit(
                    "pc_sample",
                    format!(
                        "a PC sample of dispatch {id} of process {pid}, which is not a dispatch the run traced"
                    ),
                );
                continue;
            };
            if !self.agents[kernel.agent].pc_sampling || !(start..end).contains(&at) {
                misfit(
                    "pc_sample",
                    format!(
                        "a PC sample at {at} of dispatch {id} of process {pid} ({}, {start} to {end}, GPU {})",
                        kernel.name, kernel.agent
                    ),
                );
            }
            *samples.entry((pid, id)).or_default() += 1;
        }
        for ((pid, id), n) in samples {
            let kernel = dispatches[&(pid, id)].0;
            if n != kernel.pc_samples {
                misfit(
                    "pc_sample",
                    format!(
                        "dispatch {id} of process {pid} ({}): {n} PC samples, want {}",
                        kernel.name, kernel.pc_samples
                    ),
                );
            }
        }
        out
    }
}

/// Per process, its dispatches: id and kernel name.
pub type Dispatches = BTreeMap<u64, Vec<(u64, String)>>;

/// What a pipeline collects, as its author says (the test states it; it is never read from
/// rocflow).
#[derive(Debug, Clone, Default)]
pub struct Collects {
    pub dispatches: bool,
    /// Per API domain traced, the functions (globs; empty: all) its filter keeps and drops.
    pub api: Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)>,
    pub copies: bool,
    pub allocations: bool,
    pub markers: bool,
    /// Counters collected per dispatch, summed over their dimensions.
    pub counters: Vec<&'static str>,
    /// Derived counters that divide one collected counter by another: name, numerator,
    /// denominator.
    pub ratios: Vec<(&'static str, &'static str, &'static str)>,
    /// PC samples, on every GPU that takes them.
    pub pc_samples: bool,
    /// The events of every KFD tracing domain.
    pub kfd: bool,
    /// Counters only of kernels whose demangled name matches (a regex), if set.
    pub counted_kernels: Option<&'static str>,
    /// How the outputs name kernels.
    pub names: KernelNames,
    /// Only dispatches that took at least this long (a filter on dispatches; counters
    /// are kept).
    pub min_kernel_ns: u64,
    /// Counter values summed over their dimensions (as the templates' `reduce_dimensions`
    /// does): one per dispatch and counter, at coordinate 0, not one per instance.
    pub summed: bool,
    /// Device counter reads of every GPU (see [`device`]).
    pub device_counters: bool,
    /// HIP graph launches and HIP event barriers (see [`graphs`]).
    pub graphs: bool,
    /// The counters SPM streams of every dispatch (see [`spm`]).
    pub spm: Vec<&'static str>,
    /// A thread trace of each kernel's first dispatch in every process, on shader engine
    /// 0 (the `thread-trace` template; see [`thread_trace_hits`]).
    pub thread_trace: bool,
}

/// How kernels are named (the pipeline's `kernel_names`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum KernelNames {
    /// As `c++filt` demangles them.
    #[default]
    Demangled,
    /// As the code object gives them.
    Mangled,
    /// The demangled function's own name: no return type, namespaces, template arguments
    /// or parameters.
    Truncated,
}

impl Collects {
    /// Every kind of record the default scenario makes (dispatches, the HIP runtime and
    /// HSA core APIs it calls, copies, allocations, markers), with these counters.
    pub fn everything(counters: &[&'static str]) -> Collects {
        Collects {
            dispatches: true,
            api: vec![
                ("hip_runtime_api", vec![], vec![]),
                ("hsa_core_api", vec![], vec![]),
            ],
            copies: true,
            allocations: true,
            markers: true,
            counters: counters.to_vec(),
            ..Collects::default()
        }
    }

    /// Everything two pipelines collect together.
    pub fn and(mut self, other: &Collects) -> Collects {
        self.dispatches |= other.dispatches;
        self.copies |= other.copies;
        self.allocations |= other.allocations;
        self.markers |= other.markers;
        self.pc_samples |= other.pc_samples;
        self.kfd |= other.kfd;
        self.device_counters |= other.device_counters;
        self.graphs |= other.graphs;
        self.thread_trace |= other.thread_trace;
        for &counter in &other.spm {
            if !self.spm.contains(&counter) {
                self.spm.push(counter);
            }
        }
        for api in &other.api {
            match self.api.iter_mut().find(|a| a.0 == api.0) {
                // Either filter's functions: all if either keeps all and drops none.
                Some(mine) if mine.1.is_empty() && mine.2.is_empty() => {}
                Some(mine) if api.1.is_empty() && api.2.is_empty() => *mine = api.clone(),
                Some(mine) => {
                    assert!(
                        mine.2.is_empty() && api.2.is_empty(),
                        "unions of exclusions"
                    );
                    mine.1.extend(&api.1);
                }
                None => self.api.push(api.clone()),
            }
        }
        for c in &other.counters {
            if !self.counters.contains(c) {
                self.counters.push(c);
            }
        }
        self.ratios.extend(&other.ratios);
        self.counted_kernels = self.counted_kernels.or(other.counted_kernels);
        if self.names == KernelNames::Demangled {
            self.names = other.names;
        }
        self.min_kernel_ns = self.min_kernel_ns.max(other.min_kernel_ns);
        self.summed |= other.summed;
        self
    }

    fn traces(&self, domain: &str, function: &str) -> bool {
        let matches = |globs: &[&str]| globs.iter().any(|g| glob(g, function));
        self.api.iter().any(|(d, keep, drop)| {
            *d == domain && (keep.is_empty() || matches(keep)) && !matches(drop)
        })
    }

    fn counted(&self, name: &str) -> bool {
        self.counted_kernels
            .is_none_or(|pattern| regex::Regex::new(pattern).unwrap().is_match(name))
    }

    /// A kernel's name in the outputs.
    fn name<'k>(&self, kernel: &'k Kernel) -> &'k str {
        match self.names {
            KernelNames::Demangled => &kernel.name,
            KernelNames::Mangled => &kernel.mangled,
            KernelNames::Truncated => truncated(&kernel.name),
        }
    }
}

/// The function's own name in a demangled one: `void solver::smooth<8>(double*)` is
/// `smooth`.
fn truncated(demangled: &str) -> &str {
    let mut depth = 0;
    let mut end = demangled.len();
    // The parameters begin at the first parenthesis outside template arguments.
    for (i, c) in demangled.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let mut head = &demangled[..end];
    if head.ends_with('>') {
        head = &head[..head.find('<').unwrap_or(head.len())];
    }
    let head = head.rsplit("::").next().unwrap_or(head);
    head.rsplit(' ').next().unwrap_or(head)
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => text.strip_prefix(head).is_some_and(|tail| {
            (0..=tail.len()).any(|i| tail.is_char_boundary(i) && glob(rest, &tail[i..]))
        }),
    }
}

/// A row of a table of rocflow's record columns (CSV or Parquet), each column as text.
pub type Row = BTreeMap<String, String>;
/// The rows of such a table.
pub type Rows = Vec<Row>;

/// A tally of the record tables of rocflow's CSV and Parquet sinks, by kind.
pub fn tally_tables(table: impl Fn(&str) -> Rows) -> (Tally, Dispatches) {
    let mut tally = Tally::default();
    let mut dispatches = Dispatches::new();
    let num = |row: &BTreeMap<String, String>, key: &str| -> u64 {
        row[key].parse::<f64>().unwrap() as u64
    };
    let mut kernel_of = BTreeMap::new();
    for row in table("kernel_dispatch") {
        let name = row["kernel_name"].clone();
        *tally.kernels.entry(name.clone()).or_default() += 1;
        *tally.kernel_ns.entry(name.clone()).or_default() += num(&row, "duration_ns");
        let (pid, id) = (num(&row, "pid"), num(&row, "dispatch_id"));
        dispatches.entry(pid).or_default().push((id, name.clone()));
        kernel_of.insert((pid, id), name);
    }
    for row in table("api") {
        *tally.api.entry(row["operation"].clone()).or_default() += 1;
    }
    for row in table("memory_copy") {
        *tally.copies.entry(row["direction"].clone()).or_default() += 1;
        *tally
            .copy_bytes
            .entry(row["direction"].clone())
            .or_default() += num(&row, "bytes");
    }
    for row in table("memory_allocation") {
        *tally
            .allocations
            .entry(row["operation"].clone())
            .or_default() += 1;
    }
    tally.pc_samples = table("pc_sample").len() as u64;
    for row in table("kfd_event") {
        *tally.kfd.entry(row["domain"].clone()).or_default() += 1;
    }
    for row in table("marker") {
        *tally.markers.entry(row["message"].clone()).or_default() += 1;
    }
    let mut seen = BTreeSet::new();
    for row in table("counter_sample") {
        let (pid, id) = (num(&row, "pid"), num(&row, "dispatch_id"));
        let kernel = kernel_of.get(&(pid, id)).cloned().unwrap_or_default();
        let key = (kernel, row["counter"].clone());
        let entry = tally.counters.entry(key.clone()).or_default();
        if seen.insert((pid, id, key.1)) {
            entry.0 += 1;
        }
        entry.1 += row["value"].parse::<f64>().unwrap();
    }
    for list in dispatches.values_mut() {
        list.sort();
    }
    (tally, dispatches)
}

/// The record tables of rocflow's CSV sink in `dir` (one file per kind; a kind without
/// records has none).
pub fn csv_tables(dir: &Path) -> (Tally, Dispatches) {
    tally_tables(|kind| csv_table(dir, kind))
}

/// The rows of the table of `kind` that rocflow's CSV sink wrote in `dir`: none where it
/// wrote no file, as for a kind without records.
pub fn csv_table(dir: &Path, kind: &str) -> Rows {
    let file = dir.join(format!("{kind}.csv"));
    match file.exists() {
        true => csv(&file),
        false => Vec::new(),
    }
}

/// The record tables of rocflow's Parquet sink in `dir`, partitioned or not, read by DuckDB.
pub fn parquet_tables(dir: &Path) -> (Tally, Dispatches) {
    let kinds = [
        "kernel_dispatch",
        "api",
        "memory_copy",
        "memory_allocation",
        "marker",
        "counter_sample",
        "pc_sample",
        "kfd_event",
    ];
    let present: Vec<&str> = kinds.into_iter().filter(|k| dir.join(k).is_dir()).collect();
    let queries: Vec<String> = (present.iter())
        .map(|k| format!("SELECT * FROM read_parquet('{k}/**/*.parquet')"))
        .collect();
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    // DuckDB gives rows without their column names: ask for them once per kind.
    let names: Vec<String> = (present.iter())
        .map(|k| format!("DESCRIBE SELECT * FROM read_parquet('{k}/**/*.parquet')"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows = duckdb(dir, &queries);
    let columns = duckdb(dir, &names);
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    tally_tables(|kind| {
        let Some(i) = present.iter().position(|k| *k == kind) else {
            return Vec::new();
        };
        let columns: Vec<String> = columns[i].iter().map(|c| text(&c[0])).collect();
        (rows[i].iter())
            .map(|row| columns.iter().cloned().zip(row.iter().map(text)).collect())
            .collect()
    })
}

/// What thread traces on the scenario at `path` hold when each kernel ran `dispatches`
/// times while they traced (a device trace, or a trace of chosen dispatches): per code
/// object (a GPU's, its index + 1) and instruction address, how many times traced waves
/// ran the instruction. A dispatch spreads its waves evenly over its GPU's CUs, at least
/// one and at most a CU's wave slots on each; every shader engine of
/// `shader_engine_mask` that the GPU has traces the target CU's waves on every SIMD, and
/// each wave runs each instruction of its kernel once.
pub fn thread_trace_hits(
    path: &Path,
    shader_engine_mask: u64,
    dispatches: u64,
) -> BTreeMap<(u64, u64), u64> {
    use rocflow_core::sim_trace::{INSTRUCTION_BYTES, isa, kernel_offset};
    let scenario = rocflow_core::scenario::Scenario::read(path).unwrap();
    let mut hits = BTreeMap::new();
    for (k, kernel) in scenario.kernels.iter().enumerate() {
        let gpu = &scenario.agents[kernel.agent as usize];
        let threads: u64 = kernel.grid.iter().map(|&g| u64::from(g.max(1))).product();
        let waves = threads.div_ceil(u64::from(gpu.wave_front_size.max(1)));
        let slots = u64::from(gpu.simd_per_cu.max(1) * gpu.max_waves_per_simd.max(1));
        let on_cu = waves
            .div_ceil(u64::from(gpu.cu_count.max(1)))
            .clamp(1, slots);
        let engines = (0..u64::from(gpu.shader_engines.max(1)))
            .filter(|se| shader_engine_mask >> se & 1 == 1)
            .count() as u64;
        for n in 0..isa(kernel).len() as u64 {
            let address = kernel_offset(k) + n * INSTRUCTION_BYTES;
            *hits
                .entry((u64::from(kernel.agent) + 1, address))
                .or_default() += dispatches * on_cu * engines;
        }
    }
    hits
}

/// A tally of a rocpd database, through the views AMD's rocpd tools read.
pub fn rocpd(db: &Path) -> Tally {
    let db = rusqlite::Connection::open(db).unwrap();
    let mut tally = Tally::default();
    // SQLite's integers are signed.
    let n = |r: &rusqlite::Row, i: usize| r.get::<_, i64>(i).map(|v| v as u64);
    let kernels: Vec<(String, u64, u64)> = sqlite_rows(
        &db,
        "SELECT name, COUNT(*), SUM(duration) FROM kernels GROUP BY name",
        |r| Ok((r.get(0)?, n(r, 1)?, n(r, 2)?)),
    );
    for (name, calls, ns) in kernels {
        tally.kernels.insert(name.clone(), calls);
        tally.kernel_ns.insert(name, ns);
    }
    let regions: Vec<(String, String, Option<String>, u64)> = sqlite_rows(
        &db,
        "SELECT category, name, json_extract(extdata, '$.message'), COUNT(*) FROM regions GROUP BY 1, 2, 3",
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, n(r, 3)?)),
    );
    for (category, name, message, calls) in regions {
        if category.starts_with("MARKER") {
            *tally.markers.entry(message.unwrap_or(name)).or_default() += calls;
        } else {
            *tally.api.entry(name).or_default() += calls;
        }
    }
    let copies: Vec<(String, u64, u64)> = sqlite_rows(
        &db,
        "SELECT name, COUNT(*), SUM(size) FROM memory_copies GROUP BY name",
        |r| Ok((r.get(0)?, n(r, 1)?, n(r, 2)?)),
    );
    for (name, count, bytes) in copies {
        let direction = name.trim_start_matches("MEMORY_COPY_").to_owned();
        tally.copies.insert(direction.clone(), count);
        tally.copy_bytes.insert(direction, bytes);
    }
    let allocations: Vec<(String, u64)> = sqlite_rows(
        &db,
        "SELECT type, COUNT(*) FROM memory_allocations GROUP BY type",
        |r| Ok((r.get(0)?, n(r, 1)?)),
    );
    for (kind, count) in allocations {
        let operation = match kind.as_str() {
            "ALLOC" => "ALLOCATE".to_owned(),
            other => other.to_owned(),
        };
        tally.allocations.insert(operation, count);
    }
    let counters: Vec<(String, String, u64, f64)> = sqlite_rows(
        &db,
        "SELECT kernel_name, counter_name, COUNT(DISTINCT pid || ':' || dispatch_id), SUM(value) FROM counters_collection GROUP BY 1, 2",
        |r| Ok((r.get(0)?, r.get(1)?, n(r, 2)?, r.get(3)?)),
    );
    for (kernel, counter, dispatches, sum) in counters {
        tally.counters.insert((kernel, counter), (dispatches, sum));
    }
    // Instants: PC samples and KFD events (of a category named after its domain); the
    // view holds device counting's samples too, which are neither.
    let samples: Vec<(String, u64)> = sqlite_rows(
        &db,
        "SELECT category, COUNT(*) FROM samples GROUP BY category",
        |r| Ok((r.get(0)?, n(r, 1)?)),
    );
    for (category, count) in samples {
        if category.starts_with("PC_SAMPLING") {
            tally.pc_samples += count;
        } else if category.starts_with("KFD_") {
            tally.kfd.insert(category.to_ascii_lowercase(), count);
        }
    }
    tally
}

/// A tally of the summary's JSON (`summary.json`).
pub fn summary(json: &Path) -> Tally {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let rows = |key: &str| doc[key].as_array().cloned().unwrap_or_default();
    let int = |v: &serde_json::Value| v.as_f64().unwrap() as u64;
    let mut tally = Tally::default();
    for row in rows("kernels") {
        let name = row["kernel"].as_str().unwrap().to_owned();
        *tally.kernels.entry(name.clone()).or_default() += int(&row["calls"]);
        *tally.kernel_ns.entry(name).or_default() += int(&row["total_ns"]);
    }
    for row in rows("api") {
        let name = row["function"].as_str().unwrap().to_owned();
        *tally.api.entry(name).or_default() += int(&row["calls"]);
    }
    for row in rows("memory_copies") {
        let direction = row["direction"].as_str().unwrap().to_owned();
        *tally.copies.entry(direction.clone()).or_default() += int(&row["calls"]);
        *tally.copy_bytes.entry(direction).or_default() += int(&row["bytes"]);
    }
    for row in rows("memory_allocations") {
        let operation = row["operation"].as_str().unwrap().to_owned();
        *tally.allocations.entry(operation).or_default() += int(&row["calls"]);
    }
    for row in rows("markers") {
        let range = row["range"].as_str().unwrap().to_owned();
        *tally.markers.entry(range).or_default() += int(&row["calls"]);
    }
    for row in rows("counters") {
        let key = (
            row["kernel"].as_str().unwrap().to_owned(),
            row["counter"].as_str().unwrap().to_owned(),
        );
        let entry = tally.counters.entry(key).or_default();
        entry.0 += int(&row["dispatches"]);
        entry.1 += row["total_value"].as_f64().unwrap();
    }
    tally
}

/// A tally of Perfetto traces decoded with the official schema: slices by category, each
/// kernel slice's time from its begin to its end, and the allocations and frees that
/// moved an agent's allocated memory up or down.
pub fn perfetto(files: &[std::path::PathBuf]) -> Tally {
    let mut tally = Tally::default();
    for file in crate::decode_perfetto(files) {
        let mut open: BTreeMap<String, Vec<(String, String, u64)>> = BTreeMap::new();
        let mut allocated: BTreeMap<String, i64> = BTreeMap::new();
        for event in file["events"].as_array().unwrap() {
            let track = event["track"].to_string();
            let ts = event["ts"].as_u64().unwrap();
            match event["type"].as_str().unwrap() {
                "C" if file["tracks"][&track]["name"] == "allocated memory" => {
                    let now = event["value"].as_i64().unwrap();
                    let before = allocated.insert(track, now).unwrap_or(0);
                    let operation = if now > before { "ALLOCATE" } else { "FREE" };
                    *tally.allocations.entry(operation.into()).or_default() += 1;
                }
                "B" => {
                    let category = event["category"].as_str().unwrap_or_default().to_owned();
                    let name = event["name"].as_str().unwrap_or_default().to_owned();
                    open.entry(track).or_default().push((category, name, ts));
                }
                "E" => {
                    let (category, name, start) = open
                        .get_mut(&track)
                        .and_then(Vec::pop)
                        .expect("an end closes a slice its track began");
                    match category.as_str() {
                        "kernel_dispatch" => {
                            *tally.kernels.entry(name.clone()).or_default() += 1;
                            *tally.kernel_ns.entry(name).or_default() += ts - start;
                        }
                        "memory_copy" => *tally.copies.entry(name).or_default() += 1,
                        c if c.starts_with("marker") => {
                            *tally.markers.entry(name).or_default() += 1
                        }
                        // A slice of a host API's call: of a domain whose records are
                        // calls (the `_api` ones, a graph launch, a HIP event).
                        c if rocflow_core::sdk::Domain::from_name(c).is_some_and(|d| {
                            d.record_kind() == rocflow_core::record::RecordKind::Api
                        }) =>
                        {
                            *tally.api.entry(name).or_default() += 1
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
    }
    tally
}

/// A tally of an OTF2 archive read by `otf2-print`: the regions entered, by name, sorted
/// by what the truth says each name is.
pub fn otf2(archive: &Path, truth: &Tally) -> Tally {
    let mut tally = Tally::default();
    // A run without records has no archive (OTF2's readers refuse one without locations).
    if !archive.exists() && *truth == Tally::default() {
        return tally;
    }
    let events = otf2_print(&[], archive);
    let entered = (events.lines())
        .filter(|l| l.starts_with("ENTER "))
        .filter_map(|l| l.split("Region: \"").nth(1)?.split('"').next());
    for name in entered.map(str::to_owned) {
        if truth.kernels.contains_key(&name) {
            *tally.kernels.entry(name).or_default() += 1;
        } else if truth.copies.contains_key(&name) {
            *tally.copies.entry(name).or_default() += 1;
        } else if truth.markers.contains_key(&name) {
            *tally.markers.entry(name).or_default() += 1;
        } else if truth.allocations.contains_key(&name) {
            *tally.allocations.entry(name).or_default() += 1;
        } else {
            *tally.api.entry(name).or_default() += 1;
        }
    }
    tally
}

/// A tally of the CSV files rocprofv3 writes (`PREFIX_kernel_trace.csv`, …), as rocflow's
/// CSV sink writes them with `flavour = "rocprofv3"`: those among `files`, each told by
/// the end of its name.
pub fn rocprofv3_csv(files: &[std::path::PathBuf]) -> Tally {
    const TABLES: &[&str] = &[
        "_kernel_trace.csv",
        "_marker_api_trace.csv",
        "_memory_copy_trace.csv",
        "_memory_allocation_trace.csv",
        "_counter_collection.csv",
        "_pc_sampling_host_trap.csv",
        "_pc_sampling_stochastic.csv",
        "_api_trace.csv",
    ];
    let mut tally = Tally::default();
    let int = |row: &BTreeMap<String, String>, key: &str| row[key].parse::<u64>().unwrap();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(table) = TABLES.iter().find(|t| name.ends_with(*t)) else {
            continue;
        };
        let rows = || csv(path);
        match *table {
            "_kernel_trace.csv" => {
                for row in rows() {
                    let kernel = row["Kernel_Name"].clone();
                    let ns = int(&row, "End_Timestamp") - int(&row, "Start_Timestamp");
                    *tally.kernels.entry(kernel.clone()).or_default() += 1;
                    *tally.kernel_ns.entry(kernel).or_default() += ns;
                }
            }
            "_marker_api_trace.csv" => {
                for row in rows() {
                    *tally.markers.entry(row["Function"].clone()).or_default() += 1;
                }
            }
            "_memory_copy_trace.csv" => {
                for row in rows() {
                    let direction = row["Direction"].trim_start_matches("MEMORY_COPY_");
                    *tally.copies.entry(direction.to_owned()).or_default() += 1;
                }
            }
            "_memory_allocation_trace.csv" => {
                for row in rows() {
                    let operation = row["Operation"].trim_start_matches("MEMORY_ALLOCATION_");
                    *tally.allocations.entry(operation.to_owned()).or_default() += 1;
                }
            }
            "_counter_collection.csv" => {
                let mut seen = BTreeSet::new();
                for row in rows() {
                    let key = (row["Kernel_Name"].clone(), row["Counter_Name"].clone());
                    let entry = tally.counters.entry(key.clone()).or_default();
                    if seen.insert((row["Dispatch_Id"].clone(), key.1)) {
                        entry.0 += 1;
                    }
                    entry.1 += row["Counter_Value"].parse::<f64>().unwrap();
                }
            }
            "_pc_sampling_host_trap.csv" | "_pc_sampling_stochastic.csv" => {
                tally.pc_samples += rows().len() as u64;
            }
            "_api_trace.csv" => {
                for row in rows() {
                    *tally.api.entry(row["Function"].clone()).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    tally
}

/// A tally of rocprofv3's JSON documents (`rocprofv3 -f json`), read as AMD's scripts read
/// them: names through `strings`, `kernel_symbols` and `counters`, markers by their
/// messages in `strings.marker_api`. Also each process's dispatches.
pub fn rocprofv3_json(files: &[std::path::PathBuf]) -> (Tally, Dispatches) {
    use serde_json::Value;
    let mut tally = Tally::default();
    let mut dispatches = Dispatches::new();
    let n = |v: &Value| v.as_u64().unwrap();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let document: Value = serde_json::from_str(&text).unwrap();
        for data in document["rocprofiler-sdk-tool"].as_array().unwrap() {
            let operation = |r: &Value| {
                let kind = &data["strings"]["buffer_records"][n(&r["kind"]) as usize];
                kind["operations"][n(&r["operation"]) as usize]
                    .as_str()
                    .unwrap()
                    .to_owned()
            };
            let kernel = |id: &Value| {
                let symbol = &data["kernel_symbols"][n(id) as usize];
                symbol["formatted_kernel_name"].as_str().unwrap().to_owned()
            };
            let records = |key: &str| data["buffer_records"][key].as_array().unwrap().clone();
            let pid = n(&data["metadata"]["pid"]);
            for r in records("kernel_dispatch") {
                let name = kernel(&r["dispatch_info"]["kernel_id"]);
                let ns = n(&r["end_timestamp"]) - n(&r["start_timestamp"]);
                *tally.kernels.entry(name.clone()).or_default() += 1;
                *tally.kernel_ns.entry(name.clone()).or_default() += ns;
                let id = n(&r["dispatch_info"]["dispatch_id"]);
                dispatches.entry(pid).or_default().push((id, name));
            }
            for key in [
                "hip_api",
                "hsa_api",
                "rccl_api",
                "rocdecode_api",
                "rocjpeg_api",
            ] {
                for r in records(key) {
                    *tally.api.entry(operation(&r)).or_default() += 1;
                }
            }
            let messages: BTreeMap<u64, &str> = (data["strings"]["marker_api"].as_array())
                .unwrap()
                .iter()
                .map(|e| (n(&e["key"]), e["value"].as_str().unwrap()))
                .collect();
            for r in records("marker_api") {
                let name = match messages.get(&n(&r["correlation_id"]["internal"])) {
                    Some(message) => message.to_string(),
                    None => operation(&r),
                };
                *tally.markers.entry(name).or_default() += 1;
            }
            for r in records("memory_copy") {
                let direction = operation(&r).trim_start_matches("MEMORY_COPY_").to_owned();
                *tally.copies.entry(direction.clone()).or_default() += 1;
                *tally.copy_bytes.entry(direction).or_default() += n(&r["bytes"]);
            }
            for r in records("memory_allocation") {
                let op = operation(&r)
                    .trim_start_matches("MEMORY_ALLOCATION_")
                    .to_owned();
                *tally.allocations.entry(op).or_default() += 1;
            }
            tally.pc_samples += (records("pc_sample_host_trap").len()
                + records("pc_sample_stochastic").len()) as u64;
            let counters = data["counters"].as_array().unwrap();
            for entry in data["callback_records"]["counter_collection"]
                .as_array()
                .unwrap()
            {
                let name = kernel(&entry["dispatch_data"]["dispatch_info"]["kernel_id"]);
                let mut values: BTreeMap<String, f64> = BTreeMap::new();
                for record in entry["records"].as_array().unwrap() {
                    let id = &record["counter_id"]["handle"];
                    let counter = counters.iter().find(|c| &c["id"]["handle"] == id).unwrap();
                    let counter = counter["name"].as_str().unwrap().to_owned();
                    *values.entry(counter).or_default() += record["value"].as_f64().unwrap();
                }
                for (counter, value) in values {
                    let sums = tally.counters.entry((name.clone(), counter)).or_default();
                    sums.0 += 1;
                    sums.1 += value;
                }
            }
        }
    }
    (tally, dispatches)
}

/// A tally of what AMD's `rocpd summary` says of a database: its kernel, API (one table a
/// domain), copy, allocation and marker tables.
pub fn amd_summary(stats: &crate::peer::Stats) -> Tally {
    let mut tally = Tally::default();
    for (table, rows) in stats {
        for (name, &(calls, ns)) in rows {
            let name = name.clone();
            match table.as_str() {
                "kernels" => {
                    tally.kernels.insert(name.clone(), calls);
                    tally.kernel_ns.insert(name, ns);
                }
                "markers" => *tally.markers.entry(name).or_default() += calls,
                "memory_copies" => {
                    let direction = name.trim_start_matches("MEMORY_COPY_").to_owned();
                    *tally.copies.entry(direction).or_default() += calls;
                }
                "memory_allocations" => {
                    let operation = if name == "ALLOC" {
                        "ALLOCATE".into()
                    } else {
                        name
                    };
                    *tally.allocations.entry(operation).or_default() += calls;
                }
                _ if name.starts_with("PC_SAMPLING") => tally.pc_samples += calls,
                // An instant's category is its name: a KFD event's is its domain's.
                _ if name.starts_with("KFD_") => {
                    *tally.kfd.entry(name.to_ascii_lowercase()).or_default() += calls
                }
                // Device counting's tracks: their samples are held against the truth
                // as the CSV sink writes them (see `device`).
                _ if name.starts_with("DEVICE_COUNTING") => {}
                _ => *tally.api.entry(name).or_default() += calls,
            }
        }
    }
    tally
}

/// A tally of the HTML report's summary tables: each `<table class="sortable">`, its
/// columns from its header, each number from its cell's `data-value` (the cell's text may
/// be rounded).
pub fn report(html: &Path) -> Tally {
    let html = std::fs::read_to_string(html).unwrap();
    let mut tally = Tally::default();
    for table in html.split("<table class=\"sortable\">").skip(1) {
        let table = &table[..table.find("</table>").expect("a table ends")];
        // `<th>` and `<th title=…>`, not `<thead>`.
        let columns: Vec<String> = (table.split("<th").skip(1))
            .filter(|th| th.starts_with(['>', ' ']))
            .map(|th| unescape(between(th, ">", "</th>")))
            .collect();
        let rows = table.split("<tr>").skip(2).map(|tr| {
            let cells = (tr.split("<td").skip(1)).map(|td| match td.split_once("data-value=\"") {
                Some((attributes, value)) if !attributes.contains('>') => {
                    value[..value.find('"').unwrap()].to_owned()
                }
                _ => unescape(between(td, ">", "</td>")),
            });
            columns
                .iter()
                .cloned()
                .zip(cells)
                .collect::<BTreeMap<String, String>>()
        });
        let int = |row: &BTreeMap<String, String>, key: &str| {
            row[key].parse::<f64>().unwrap().round() as u64
        };
        let key = columns.first().map(String::as_str);
        for row in rows {
            match (key, columns.get(1).map(String::as_str)) {
                (Some("kernel"), Some("counter")) => {
                    let entry = (tally.counters)
                        .entry((row["kernel"].clone(), row["counter"].clone()))
                        .or_default();
                    entry.0 += int(&row, "dispatches");
                    entry.1 += row["total_value"].parse::<f64>().unwrap();
                }
                (Some("kernel"), _) => {
                    let kernel = row["kernel"].clone();
                    *tally.kernels.entry(kernel.clone()).or_default() += int(&row, "calls");
                    *tally.kernel_ns.entry(kernel).or_default() += int(&row, "total_ns");
                }
                (Some("domain"), _) => {
                    *tally.api.entry(row["function"].clone()).or_default() += int(&row, "calls");
                }
                (Some("direction"), _) => {
                    let direction = row["direction"].clone();
                    *tally.copies.entry(direction.clone()).or_default() += int(&row, "calls");
                    *tally.copy_bytes.entry(direction).or_default() += int(&row, "bytes");
                }
                (Some("operation"), _) => {
                    let operation = row["operation"].clone();
                    *tally.allocations.entry(operation).or_default() += int(&row, "calls");
                }
                (Some("range"), _) => {
                    *tally.markers.entry(row["range"].clone()).or_default() += int(&row, "calls");
                }
                _ => {}
            }
        }
    }
    tally
}

/// The findings of the report at `html`: each one's rule and statement, in the table's
/// order.
pub fn report_findings(html: &Path) -> Vec<(String, String)> {
    let html = std::fs::read_to_string(html).unwrap();
    let Some(at) = html.find("<table class=\"findings\">") else {
        return Vec::new();
    };
    let table = &html[at..at + html[at..].find("</table>").expect("a table ends")];
    (table.split("<tr class=").skip(1))
        .map(|row| {
            let cells: Vec<&str> = row.split("<td>").skip(1).collect();
            let rule = between(cells[1], "<code>", "</code>");
            (unescape(rule), unescape(between(cells[3], "", "</td>")))
        })
        .collect()
}

/// The text of `s` after the first `start` and before the next `end`.
fn between<'s>(s: &'s str, start: &str, end: &str) -> &'s str {
    let from = s.find(start).expect("the start is there") + start.len();
    let to = s[from..].find(end).expect("the end is there") + from;
    &s[from..to]
}

/// Text as HTML escapes it, unescaped.
fn unescape(s: &str) -> String {
    (s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'"))
    .replace("&amp;", "&")
}
