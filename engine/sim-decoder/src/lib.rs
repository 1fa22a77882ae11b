//! The simulated device's trace decoder: the C API of AMD's decoder library
//! (`librocprof-trace-decoder.so`), which rocprofiler-sdk's decoder API loads from a
//! folder, over the traces the simulated device writes (see `rocflow_core::sim_trace`).
//! Like AMD's, it reads the shader data the SDK hands it, asks the SDK for the text of
//! every instruction it meets (failing on an address no loaded code object holds), and
//! returns the trace's waves, their instructions and their occupancy events.

use std::ffi::{c_char, c_void};

use rocflow_core::sim_trace::ShaderData;
use rocflow_core::thread_trace::decoder::{
    Inst, LibIsaCallback, LibSeDataCallback, LibTraceCallback, Occupancy, Pc, Wave, record, status,
};

/// The gfx9 family the simulated traces are of (the GFXIP record's value).
const GFXIP_MAJOR: usize = 9;
/// Room for an instruction's text, grown when the SDK asks for more.
const ISA_ROOM: usize = 128;
/// The instruction category a decoded instruction reports (VALU).
const CATEGORY: u32 = 6;

/// # Safety
/// The callbacks are the SDK's, with `userdata` theirs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprof_trace_decoder_parse_data(
    se_data: LibSeDataCallback,
    trace: LibTraceCallback,
    isa: LibIsaCallback,
    userdata: *mut c_void,
) -> i32 {
    let mut bytes = Vec::new();
    loop {
        let (mut buffer, mut size) = (std::ptr::null_mut(), 0u64);
        // SAFETY: the SDK's callback, with writable pointers.
        let filled = unsafe { se_data(&mut buffer, &mut size, userdata) };
        if filled == 0 || buffer.is_null() {
            break;
        }
        // SAFETY: the SDK hands `size` bytes at `buffer`, `filled` of them data.
        bytes.extend_from_slice(unsafe {
            std::slice::from_raw_parts(buffer, filled.min(size) as usize)
        });
    }
    let Some(data) = ShaderData::decode(&bytes) else {
        return status::INVALID_SHADER_DATA;
    };
    let mut gfxip = GFXIP_MAJOR;
    // SAFETY: the SDK's callback, with events alive for the call.
    unsafe {
        trace(
            record::GFXIP,
            (&mut gfxip as *mut usize).cast(),
            1,
            userdata,
        )
    };
    let mut instructions: Vec<Vec<Inst>> = Vec::with_capacity(data.waves.len());
    let mut occupancy = Vec::with_capacity(2 * data.waves.len());
    for wave in &data.waves {
        let mut executed = Vec::with_capacity(wave.instructions.len());
        for i in &wave.instructions {
            let pc = Pc {
                addr: i.offset as usize,
                marker_id: i.code_object as usize,
            };
            if let Err(status) = look_up(isa, pc, userdata) {
                return status;
            }
            executed.push(Inst {
                category_stall: CATEGORY | (i.stall.min(0xFF_FFFF) << 8),
                duration: i.duration,
                time: i.time,
                pc,
            });
        }
        let entry = executed.first().map(|i| i.pc).unwrap_or_default();
        for (time, start) in [(wave.begin, 1), (wave.end, 0)] {
            occupancy.push(Occupancy {
                pc: entry,
                time: time as u64,
                reserved: 0,
                cu: wave.cu,
                simd: wave.simd,
                slot: wave.slot,
                start,
            });
        }
        instructions.push(executed);
    }
    let mut waves: Vec<Wave> = (data.waves.iter().zip(&mut instructions))
        .map(|(w, executed)| Wave {
            cu: w.cu,
            simd: w.simd,
            wave_id: w.slot,
            contexts: 0,
            reserved: [0; 3],
            begin_time: w.begin,
            end_time: w.end,
            timeline_size: 0,
            instructions_size: executed.len(),
            timeline: std::ptr::null_mut(),
            instructions: executed.as_mut_ptr(),
        })
        .collect();
    // SAFETY: as above.
    unsafe {
        trace(
            record::OCCUPANCY,
            occupancy.as_mut_ptr().cast(),
            occupancy.len() as u64,
            userdata,
        );
        trace(
            record::WAVE,
            waves.as_mut_ptr().cast(),
            waves.len() as u64,
            userdata,
        );
    }
    status::SUCCESS
}

/// Asks the SDK for the instruction at `pc`, as AMD's decoder does to follow a wave's code.
fn look_up(isa: LibIsaCallback, pc: Pc, userdata: *mut c_void) -> Result<(), i32> {
    let mut room = ISA_ROOM;
    loop {
        let mut text = vec![0 as c_char; room];
        let (mut memory_size, mut size) = (0u64, room as u64);
        // SAFETY: the SDK's callback, with `room` bytes to write the text into.
        let answer = unsafe { isa(text.as_mut_ptr(), &mut memory_size, &mut size, pc, userdata) };
        match answer {
            status::SUCCESS => return Ok(()),
            status::OUT_OF_RESOURCES if size as usize > room => room = size as usize,
            other => return Err(other),
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprof_trace_decoder_get_info_string(info: i32) -> *const c_char {
    match info {
        1 => c"data was lost".as_ptr(),
        2 => c"the trace could not be stitched together".as_ptr(),
        _ => c"no information".as_ptr(),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprof_trace_decoder_get_status_string(value: i32) -> *const c_char {
    match value {
        status::SUCCESS => c"success".as_ptr(),
        status::OUT_OF_RESOURCES => c"out of resources".as_ptr(),
        status::INVALID_ARGUMENT => c"invalid argument".as_ptr(),
        status::INVALID_SHADER_DATA => c"invalid shader data".as_ptr(),
        _ => c"error".as_ptr(),
    }
}
