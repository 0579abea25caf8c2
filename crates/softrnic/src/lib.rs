#![no_std]
#![forbid(unsafe_code)]
extern crate alloc;
pub mod bitset;
pub mod cq;
pub mod env;
pub mod memory;
pub mod qp;
pub mod srq;
pub mod table;
