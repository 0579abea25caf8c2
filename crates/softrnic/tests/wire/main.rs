//! The packet layer's tests: RoCEv2 datagrams and CM MADs built, parsed and checked against vectors and properties.

#[path = "../common/mod.rs"]
mod common;

mod parser_props;
mod wire_cm;
mod wire_packet;
mod wire_proptest;
mod wire_vectors;
