//! Thread trace (ATT/SQTT) in the runner: the raw traces and code objects kept per
//! dispatch, and their decoding through AMD's trace decoder library.

mod decoder;

pub use decoder::{DECODER_LIBRARY, PATH_VARIABLE, decoder_search, find_decoder};
