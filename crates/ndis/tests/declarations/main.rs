//! The NDIS declarations used the way the driver and the kernel bottle
//! will, without NDIS: miniport and NDK provider characteristics and
//! attributes (`abi`), the protocol edge (`protocol`), packets whose
//! buffer spans an MDL chain (`packets`) and IP Helper rows (`netioapi`).

mod abi;
mod netioapi;
mod packets;
mod protocol;
