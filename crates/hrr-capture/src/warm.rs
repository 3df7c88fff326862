//! Capture's own machine code mapped in when the library loads, so that the first call through
//! each hook does not stop on page faults. The kernel maps a shared library's code page by
//! page as it is first executed (a minor fault each, for a few pages around it); a hook's first
//! run walks code no earlier call touched (a module load's storing, a kernel's first launch
//! record), and a program times exactly such first calls: cudaTensorCoreGemm's timed region
//! holds its kernel's lazy module load and first launch. One `madvise(MADV_POPULATE_READ)`
//! (Linux 5.14) over the library's executable segment maps all of it at once (about 2 MiB,
//! already in the page cache: a fraction of a millisecond at start-up); on older kernels one
//! byte of each page is read instead.

use std::ffi::c_void;

/// `MADV_POPULATE_READ` (Linux 5.14; the libc crate may not name it).
const MADV_POPULATE_READ: libc::c_int = 22;

/// Map every page of this library's executable segment (nothing where that fails).
pub fn page_in_own_code() {
    let Some((start, len)) = own_code() else {
        return;
    };
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p.is_power_of_two())
        .unwrap_or(4096);
    let first = start & !(page - 1);
    let end = start + len;
    // SAFETY: the range is this library's own mapped, readable code segment; populating only
    // maps its pages.
    if unsafe { libc::madvise(first as *mut c_void, end - first, MADV_POPULATE_READ) } == 0 {
        return;
    }
    // only a kernel that does not know the advice gets the pages read (any other failure,
    // a range not all mapped among them, leaves them to be mapped as they are run)
    if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        return;
    }
    let mut p = first;
    while p < end {
        // SAFETY: inside the mapped segment (readable: PF_R is checked in `own_code`).
        unsafe { std::ptr::read_volatile(p as *const u8) };
        p += page;
    }
}

/// The address and length of the loaded, readable and executable segment of this library.
fn own_code() -> Option<(usize, usize)> {
    struct Found {
        marker: usize,
        segment: Option<(usize, usize)>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid record; `data` is the `Found` below.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the loader's program headers of this object, `dlpi_phnum` of them.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        for h in headers {
            let start = info.dlpi_addr as usize + h.p_vaddr as usize;
            let len = h.p_memsz as usize;
            let code = h.p_type == libc::PT_LOAD
                && h.p_flags & libc::PF_X != 0
                && h.p_flags & libc::PF_R != 0;
            if code && (start..start + len).contains(&found.marker) {
                found.segment = Some((start, len));
                return 1;
            }
        }
        0
    }
    let mut found = Found {
        marker: page_in_own_code as fn() as usize,
        segment: None,
    };
    // SAFETY: `visit` only reads the records and writes `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut Found as *mut c_void) };
    found.segment
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    /// Whether the page at `addr` is mapped in this process (`/proc/self/pagemap` bit 63).
    fn mapped(pagemap: &mut std::fs::File, addr: usize, page: usize) -> bool {
        let mut entry = [0u8; 8];
        pagemap
            .seek(SeekFrom::Start((addr / page * 8) as u64))
            .and_then(|_| pagemap.read_exact(&mut entry))
            .expect("reading /proc/self/pagemap");
        u64::from_le_bytes(entry) >> 63 == 1
    }

    #[test]
    fn every_page_of_the_code_segment_is_mapped_in() {
        let (start, len) = own_code().expect("this test's own code segment");
        let here = every_page_of_the_code_segment_is_mapped_in as fn() as usize;
        assert!((start..start + len).contains(&here));
        page_in_own_code();
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut pagemap = std::fs::File::open("/proc/self/pagemap").expect("pagemap");
        let first = start & !(page - 1);
        let missing = (first..start + len)
            .step_by(page)
            .filter(|&p| !mapped(&mut pagemap, p, page))
            .count();
        assert_eq!(missing, 0, "pages of {len} bytes of code not mapped in");
    }
}
