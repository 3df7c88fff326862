use super::*;
use std::cell::RefCell;

/// A driver that honours every address, recording the calls.
#[derive(Default)]
struct Fake {
    calls: RefCell<Vec<String>>,
    /// Reservations land this much above the hint.
    shift: u64,
    /// Access for more than one device is refused (devices without peer access).
    no_peers: bool,
    /// The location of the last physical memory created.
    created_on: std::cell::Cell<i32>,
}

impl Fake {
    fn log(&self, s: String) {
        self.calls.borrow_mut().push(s);
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.borrow_mut())
    }
}

impl Vmm for Fake {
    fn reserve(&self, size: u64, _align: u64, hint: u64) -> Call<u64> {
        self.log(format!("reserve {hint:x}+{size:x}"));
        Ok(Ok(hint + self.shift))
    }
    fn free_reservation(&self, addr: u64, size: u64) -> Call<()> {
        self.log(format!("free_reservation {addr:x}+{size:x}"));
        Ok(Ok(()))
    }
    fn create(&self, size: u64, prop: &[u8], _flags: u64) -> Call<u64> {
        self.log(format!("create {size:x}"));
        self.created_on
            .set(i32::from_le_bytes(prop[12..16].try_into().unwrap()));
        Ok(Ok(7))
    }
    fn release(&self, handle: u64) -> Call<()> {
        self.log(format!("release {handle}"));
        Ok(Ok(()))
    }
    fn map(&self, addr: u64, size: u64, _offset: u64, _handle: u64) -> Call<()> {
        self.log(format!("map {addr:x}+{size:x}"));
        Ok(Ok(()))
    }
    fn unmap(&self, addr: u64, size: u64) -> Call<()> {
        self.log(format!("unmap {addr:x}+{size:x}"));
        Ok(Ok(()))
    }
    fn set_access(&self, addr: u64, size: u64, _desc: &[u8], n: usize) -> Call<()> {
        self.log(format!("access {addr:x}+{size:x} x{n}"));
        if self.no_peers && n > 1 {
            return Ok(Err(crate::replay::backend::shared::CallFailed {
                call: "set_access",
                code: 217,
                name: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED".into(),
            }));
        }
        Ok(Ok(()))
    }
    fn alloc(&self, size: u64) -> Call<u64> {
        self.log(format!("alloc {size:x}"));
        Ok(Ok(0x9000_0000))
    }
    fn free(&self, ptr: u64) -> Call<()> {
        self.log(format!("free {ptr:x}"));
        Ok(Ok(()))
    }
    fn synchronize(&self) -> Call<()> {
        self.log("sync".into());
        Ok(Ok(()))
    }
}

const PAGE: u64 = 0x1000;

fn exact() -> Policy {
    Policy {
        reserve: Reserve::Exact,
        per_page: false,
        refuse_unbackable: true,
        sync_before_unmap: true,
    }
}

#[test]
fn memory_is_placed_on_the_current_device_for_every_device_or_its_own() {
    for no_peers in [false, true] {
        let v = Fake {
            no_peers,
            ..Fake::default()
        };
        let mut p = Placement::new(exact(), 0, Some([0; 32]), PAGE);
        p.share_with(&[0, 1]);
        p.prereserve(&v, &[(0x10_0000, 4 * PAGE)]).unwrap();
        v.take();
        p.set_device(1);
        p.alloc(&v, 0x10_0000, PAGE).unwrap();
        assert_eq!(v.created_on.get(), 1);
        let mut want = vec!["create 1000", "map 100000+1000", "access 100000+1000 x2"];
        if no_peers {
            want.push("access 100000+1000 x1");
        }
        assert_eq!(v.take(), want);
        p.set_device(0);
        p.alloc(&v, 0x10_2000, PAGE).unwrap();
        assert_eq!(v.created_on.get(), 0);
    }
}

#[test]
fn exact_runs_map_one_segment_and_share_pages() {
    let v = Fake::default();
    let mut p = Placement::new(exact(), 0, Some([0; 32]), PAGE);
    p.prereserve(&v, &[(0x10_0000, 3 * PAGE)]).unwrap();
    assert_eq!(v.take(), ["reserve 100000+3000"]);
    p.alloc(&v, 0x10_0000, 2 * PAGE + 1).unwrap();
    assert_eq!(
        v.take(),
        ["create 3000", "map 100000+3000", "access 100000+3000 x1"]
    );
    // Shares the last page: nothing new to map.
    p.alloc(&v, 0x10_2100, 0x100).unwrap();
    assert!(v.take().is_empty());
    p.free(&v, 0x10_0000).unwrap();
    assert!(v.take().is_empty(), "the last page is still in use");
    p.free(&v, 0x10_2100).unwrap();
    assert_eq!(v.take(), ["sync", "unmap 100000+3000", "release 7"]);
    assert_eq!((p.tally().placed, p.tally().translated), (2, 0));
}

/// Covering reservations in 1 MiB chunks, mapped page by page.
fn covering_1mib() -> Policy {
    Policy {
        reserve: Reserve::Covering { chunk: 0x10_0000 },
        per_page: true,
        refuse_unbackable: false,
        sync_before_unmap: false,
    }
}

#[test]
fn covering_maps_page_by_page_inside_kept_chunks() {
    let v = Fake::default();
    let policy = covering_1mib();
    let mut p = Placement::new(policy, 0, Some([0; 32]), PAGE);
    p.alloc(&v, 0x20_0800, PAGE).unwrap();
    assert_eq!(
        v.take(),
        [
            "reserve 200000+100000",
            "create 1000",
            "map 200000+1000",
            "access 200000+1000 x1",
            "create 1000",
            "map 201000+1000",
            "access 201000+1000 x1"
        ]
    );
    p.free(&v, 0x20_0800).unwrap();
    assert_eq!(
        v.take(),
        [
            "unmap 200000+1000",
            "release 7",
            "unmap 201000+1000",
            "release 7"
        ]
    );
}

#[test]
fn a_refused_address_falls_back_to_translation() {
    let v = Fake {
        shift: PAGE,
        ..Fake::default()
    };
    let mut p = Placement::new(exact(), 0, Some([0; 32]), PAGE);
    p.alloc(&v, 0x30_0000, 16).unwrap();
    assert_eq!(
        v.take(),
        [
            "reserve 300000+1000",
            "free_reservation 301000+1000",
            "alloc 10"
        ]
    );
    let t = p.tally();
    assert_eq!((t.placed, t.translated), (0, 1));
    assert!(t.first_refusal.unwrap().contains("at 0x301000"));
    assert_eq!(p.translate(0x30_0008), 0x9000_0008);
    p.free(&v, 0x30_0000).unwrap();
    assert_eq!(v.take(), ["free 90000000"]);
}

#[test]
fn spans_are_whole_units_merged_where_they_meet() {
    const M: u64 = 1 << 20;
    let unit = 32 * M;
    let base = 0x7f00_0000_0000u64;
    // two allocations in one chunk, one straddling the next chunk's end, one far off, one null
    let spans = spans_in_units(
        unit,
        &[
            (base + 3 * M, 4096),
            (base + 40 * M, 30 * M),
            (base + 5 * M, 1),
            (base + 200 * M, 1),
            (0, 8),
        ],
    );
    assert_eq!(
        spans,
        [(base, base + 3 * unit), (base + 6 * unit, base + 7 * unit)]
    );
    // HIP's unit of 1: the ranges themselves, merged where they touch
    assert_eq!(
        spans_in_units(1, &[(base, 10), (base + 10, 5), (base + 20, 1)]),
        [(base, base + 15), (base + 20, base + 21)]
    );
}
