//! Host platform.
