//! Registry keys (advapi32), closed on drop, and the value shapes the
//! notify object reads and writes.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::ptr;

use super::imports::{
    ERROR_FILE_NOT_FOUND, ERROR_MORE_DATA, ERROR_NO_MORE_ITEMS, ERROR_SUCCESS,
    ERROR_UNSUPPORTED_TYPE, REG_DWORD, REG_MULTI_SZ, REG_OPTION_NON_VOLATILE, REG_SZ, RegCloseKey,
    RegCreateKeyExW, RegDeleteKeyW, RegDeleteTreeW, RegEnumKeyExW, RegGetValueW, RegOpenKeyExW,
    RegSetValueExW, Win32Status,
};
use super::ptr::wide;
use crate::netcfg::Failure;
use crate::sys::{HKEY, hresult_from_win32};

/// `Err` for a Win32 error.
fn win32(status: Win32Status, operation: &'static str) -> Result<(), Failure> {
    if status == ERROR_SUCCESS {
        Ok(())
    } else {
        Err(Failure {
            operation,
            hresult: hresult_from_win32(status as u32),
        })
    }
}

/// An open registry key.
#[derive(Debug)]
pub struct Key(HKEY);

impl Key {
    /// Adopts a key handle someone opened for us (`OpenParamKey`).
    pub fn adopt(handle: HKEY) -> Key {
        Key(handle)
    }

    /// Creates (or opens) `path` under `parent` for `access`.
    pub fn create(parent: HKEY, path: &str, access: u32) -> Result<Key, Failure> {
        let path = wide(path);
        let mut handle: HKEY = ptr::null_mut();
        // SAFETY: a NUL-terminated path, a valid out-pointer, no class or
        // security attributes.
        let status = unsafe {
            RegCreateKeyExW(
                parent,
                path.as_ptr(),
                0,
                ptr::null_mut(),
                REG_OPTION_NON_VOLATILE,
                access,
                ptr::null(),
                &raw mut handle,
                ptr::null_mut(),
            )
        };
        win32(status, "RegCreateKeyExW")?;
        Ok(Key(handle))
    }

    /// Opens `path` under `parent`; `None` when it does not exist.
    pub fn open(parent: HKEY, path: &str, access: u32) -> Result<Option<Key>, Failure> {
        let path = wide(path);
        let mut handle: HKEY = ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid out-pointer.
        let status = unsafe { RegOpenKeyExW(parent, path.as_ptr(), 0, access, &raw mut handle) };
        if status == ERROR_FILE_NOT_FOUND {
            return Ok(None);
        }
        win32(status, "RegOpenKeyExW")?;
        Ok(Some(Key(handle)))
    }

    /// The raw handle, for the calls below.
    pub fn handle(&self) -> HKEY {
        self.0
    }

    /// Sets a `REG_SZ` value (`None`: the key's default value).
    pub fn set_string(&self, name: Option<&str>, value: &str) -> Result<(), Failure> {
        self.set(name, REG_SZ, &wide(value))
    }

    /// Sets a `REG_MULTI_SZ` value.
    pub fn set_multi_string(&self, name: &str, values: &[String]) -> Result<(), Failure> {
        let mut data: Vec<u16> = Vec::new();
        for value in values {
            data.extend(value.encode_utf16());
            data.push(0);
        }
        data.push(0);
        self.set(Some(name), REG_MULTI_SZ, &data)
    }

    fn set(&self, name: Option<&str>, kind: u32, data: &[u16]) -> Result<(), Failure> {
        let name = name.map(wide);
        let name_ptr = name.as_ref().map_or(ptr::null(), Vec::as_ptr);
        let bytes = u32::try_from(data.len() * 2).map_err(|_| Failure {
            operation: "RegSetValueExW",
            hresult: crate::sys::E_INVALIDARG,
        })?;
        // SAFETY: an open key, a NUL-terminated name or null (default
        // value), and `bytes` bytes of data.
        let status =
            unsafe { RegSetValueExW(self.0, name_ptr, 0, kind, data.as_ptr().cast::<u8>(), bytes) };
        win32(status, "RegSetValueExW")
    }

    /// Value `name` of subkey `subkey` (or of this key), as its type and
    /// bytes, if it exists with one of the types `flags` (`RRF_RT_*`)
    /// allows (a value of another type counts as absent: a malformed
    /// record must not stop the others from loading). Strings come
    /// NUL-terminated (RegGetValueW's guarantee).
    pub fn value(
        &self,
        subkey: Option<&str>,
        name: &str,
        flags: u32,
    ) -> Result<Option<(u32, Vec<u8>)>, Failure> {
        let subkey = subkey.map(wide);
        let subkey_ptr = subkey.as_ref().map_or(ptr::null(), Vec::as_ptr);
        let name = wide(name);
        let mut size: u32 = 0;
        let mut kind: u32 = 0;
        // Twice at most: the value may grow between the size query and
        // the read.
        for _ in 0..2 {
            // SAFETY: an open key, NUL-terminated names, a size query
            // (null data).
            let status = unsafe {
                RegGetValueW(
                    self.0,
                    subkey_ptr,
                    name.as_ptr(),
                    flags,
                    &raw mut kind,
                    ptr::null_mut(),
                    &raw mut size,
                )
            };
            if status == ERROR_FILE_NOT_FOUND || status == ERROR_UNSUPPORTED_TYPE {
                return Ok(None);
            }
            win32(status, "RegGetValueW")?;
            let mut data = vec![0u8; size as usize];
            // SAFETY: `data` has `size` writable bytes.
            let status = unsafe {
                RegGetValueW(
                    self.0,
                    subkey_ptr,
                    name.as_ptr(),
                    flags,
                    &raw mut kind,
                    data.as_mut_ptr().cast::<c_void>(),
                    &raw mut size,
                )
            };
            if status == ERROR_MORE_DATA {
                continue;
            }
            if status == ERROR_FILE_NOT_FOUND || status == ERROR_UNSUPPORTED_TYPE {
                return Ok(None);
            }
            win32(status, "RegGetValueW")?;
            data.truncate(size as usize);
            return Ok(Some((kind, data)));
        }
        Err(Failure {
            operation: "RegGetValueW",
            hresult: hresult_from_win32(ERROR_MORE_DATA as u32),
        })
    }

    /// The names of the subkeys.
    pub fn subkeys(&self) -> Result<Vec<String>, Failure> {
        let mut names = Vec::new();
        for index in 0u32.. {
            // Key names are at most 255 characters.
            let mut name = [0u16; 256];
            let mut chars = name.len() as u32;
            // SAFETY: an open key, a buffer of `chars` characters, no
            // class or time wanted.
            let status = unsafe {
                RegEnumKeyExW(
                    self.0,
                    index,
                    name.as_mut_ptr(),
                    &raw mut chars,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            };
            if status == ERROR_NO_MORE_ITEMS {
                break;
            }
            win32(status, "RegEnumKeyExW")?;
            let used = name.get(..chars as usize).unwrap_or(&[]);
            names.push(String::from_utf16_lossy(used));
        }
        Ok(names)
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        // SAFETY: a key this value opened (or adopted), closed once.
        unsafe { RegCloseKey(self.0) };
    }
}

/// Deletes the key `path` under `parent` (no subkeys); a missing key is
/// no error.
pub fn delete_key(parent: HKEY, path: &str) -> Result<(), Failure> {
    let path = wide(path);
    // SAFETY: a NUL-terminated path under an open (predefined) key.
    let status = unsafe { RegDeleteKeyW(parent, path.as_ptr()) };
    if status == ERROR_FILE_NOT_FOUND {
        return Ok(());
    }
    win32(status, "RegDeleteKeyW")
}

/// Deletes the key `path` under `parent` and everything below it; a
/// missing key is no error.
pub fn delete_tree(parent: HKEY, path: &str) -> Result<(), Failure> {
    let path = wide(path);
    // SAFETY: a NUL-terminated path under an open (predefined) key.
    let status = unsafe { RegDeleteTreeW(parent, path.as_ptr()) };
    if status == ERROR_FILE_NOT_FOUND {
        return Ok(());
    }
    win32(status, "RegDeleteTreeW")
}

/// The strings of a `REG_SZ` or `REG_MULTI_SZ` value's bytes.
pub fn strings(data: &[u8]) -> Vec<String> {
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    units
        .split(|&unit| unit == 0)
        .filter(|part| !part.is_empty())
        .map(String::from_utf16_lossy)
        .collect()
}

/// A number from a `REG_DWORD` or a decimal `REG_SZ` value.
pub fn number(kind: u32, data: &[u8]) -> Option<u32> {
    match kind {
        REG_DWORD => Some(u32::from_le_bytes(data.get(..4)?.try_into().ok()?)),
        REG_SZ => strings(data).first()?.trim().parse().ok(),
        _ => None,
    }
}
