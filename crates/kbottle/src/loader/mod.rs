//! The PE loader (what Windows' memory manager and `MmLoadSystemImage` do
//! for a driver): maps the image, binds its imports to the bottle's
//! exports, and knows which code ranges are driver code; [`image`] finds
//! or builds the image under test.

pub mod image;
pub mod pe;
