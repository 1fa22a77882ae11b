//! rocprofv3's tracing options as rocprofiler-sdk's tracing domains.

use super::input::{Job, Opt, flag};
use crate::sdk::Domain;

/// The rocprofiler-sdk domains a job traces. An aggregate option turns on each option it
/// includes that the job leaves unset, as rocprofv3 does: `sys_trace: true` with
/// `hsa_trace: false` traces no HSA API.
pub fn domains(j: &Job) -> Vec<Domain> {
    let set = |o: &Opt<bool>| o.as_ref().map(|o| o.value);
    let mut hip = set(&j.hip_trace);
    let mut hip_runtime = set(&j.hip_runtime_trace);
    let mut hip_compiler = set(&j.hip_compiler_trace);
    let mut hsa = set(&j.hsa_trace);
    let mut hsa_core = set(&j.hsa_core_trace);
    let mut hsa_amd = set(&j.hsa_amd_trace);
    let mut hsa_image = set(&j.hsa_image_trace);
    let mut hsa_finalize = set(&j.hsa_finalize_trace);
    let mut marker = set(&j.marker_trace);
    let mut kernel = set(&j.kernel_trace);
    let mut memory_copy = set(&j.memory_copy_trace);
    let mut memory_allocation = set(&j.memory_allocation_trace);
    let mut scratch_memory = set(&j.scratch_memory_trace);
    let mut rccl = set(&j.rccl_trace);
    let mut rocdecode = set(&j.rocdecode_trace);
    let mut rocjpeg = set(&j.rocjpeg_trace);
    let kfd = set(&j.kfd_trace);
    let mut kfd_migration = set(&j.kfd_page_migration_trace);
    let mut kfd_mapping = set(&j.kfd_page_mapping_trace);
    let mut kfd_queue = set(&j.kfd_queue_trace);
    let mut kfd_dropped = set(&j.kfd_dropped_events_trace);
    let mut ompt = j.ompt_trace.as_ref().map(|o| o.value.asks());
    // Domains newer SDKs added: only their own options trace them, so that an aggregate
    // option runs on every SDK since 1.0 (see `Domain::since`).
    let hip_graph = set(&j.hip_graph_trace);
    let hip_event = set(&j.hip_event_trace);
    let rocshmem = set(&j.rocshmem_trace);
    let hipfile = set(&j.hipfile_trace);
    let fill = |options: &mut [&mut Option<bool>]| {
        for option in options {
            option.get_or_insert(true);
        }
    };
    if flag(&j.kokkos_trace) {
        fill(&mut [&mut marker]);
    }
    let (sys, runtime) = (flag(&j.sys_trace), flag(&j.runtime_trace));
    if sys {
        fill(&mut [&mut hip, &mut hsa]);
    }
    if runtime {
        fill(&mut [&mut hip_runtime]);
    }
    // What both include besides their APIs (KFD events and OpenMP since SDK 1.3).
    let mut kfd = kfd;
    if sys || runtime {
        fill(&mut [
            &mut marker,
            &mut kernel,
            &mut memory_copy,
            &mut memory_allocation,
            &mut scratch_memory,
            &mut rccl,
            &mut rocdecode,
            &mut rocjpeg,
            &mut kfd,
            &mut ompt,
        ]);
    }
    if kfd == Some(true) {
        fill(&mut [
            &mut kfd_migration,
            &mut kfd_mapping,
            &mut kfd_queue,
            &mut kfd_dropped,
        ]);
    }
    if hip == Some(true) {
        fill(&mut [&mut hip_runtime, &mut hip_compiler]);
    }
    if hsa == Some(true) {
        fill(&mut [
            &mut hsa_core,
            &mut hsa_amd,
            &mut hsa_image,
            &mut hsa_finalize,
        ]);
    }
    [
        (hip_runtime, Domain::HipRuntimeApi),
        (hip_compiler, Domain::HipCompilerApi),
        (hsa_core, Domain::HsaCoreApi),
        (hsa_amd, Domain::HsaAmdExtApi),
        (hsa_image, Domain::HsaImageExtApi),
        (hsa_finalize, Domain::HsaFinalizeExtApi),
        (marker, Domain::MarkerCoreRangeApi),
        (kernel, Domain::KernelDispatch),
        (memory_copy, Domain::MemoryCopy),
        (memory_allocation, Domain::MemoryAllocation),
        (scratch_memory, Domain::ScratchMemory),
        (rccl, Domain::RcclApi),
        (rocdecode, Domain::RocdecodeApi),
        (rocjpeg, Domain::RocjpegApi),
        (kfd_migration, Domain::KfdEventPageMigrate),
        (kfd_migration, Domain::KfdPageMigrate),
        (kfd_mapping, Domain::KfdEventPageFault),
        (kfd_mapping, Domain::KfdEventUnmapFromGpu),
        (kfd_mapping, Domain::KfdPageFault),
        (kfd_queue, Domain::KfdEventQueue),
        (kfd_queue, Domain::KfdQueue),
        (kfd_dropped, Domain::KfdEventDroppedEvents),
        (ompt, Domain::Ompt),
        (hip_graph, Domain::HipGraph),
        (hip_event, Domain::HipEvent),
        (rocshmem, Domain::RocshmemApi),
        (hipfile, Domain::HipfileApi),
    ]
    .into_iter()
    .filter(|(on, _)| *on == Some(true))
    .map(|(_, domain)| domain)
    .collect()
}
