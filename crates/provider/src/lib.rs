//! NDK provider.
#![no_std]
