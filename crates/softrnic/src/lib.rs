#![no_std]
#![forbid(unsafe_code)]
extern crate alloc;
pub mod memory;
