//! The one counting global allocator of this test binary: the bytes held now, and the most held
//! since a mark. It counts every thread of the process, so the tests of this binary hold
//! [`serial`] for their whole run: one measurement at a time, whatever the test threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

struct Counting;

static HELD: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

fn grew(by: i64) {
    let now = HELD.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as i64);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as i64);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size as i64 - layout.size() as i64);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes held now, by the whole process.
pub fn held() -> i64 {
    HELD.load(Ordering::Relaxed)
}

/// Starts a peak measurement; returns the bytes held now (what [`peak`] is measured against).
pub fn mark() -> i64 {
    let now = held();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The most bytes held since the last [`mark`].
pub fn peak() -> i64 {
    PEAK.load(Ordering::Relaxed)
}

/// One test of this binary at a time (a tokio lock: it is held across awaits, and a failed test
/// does not poison it for the next).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Holds the binary's one measurement slot until dropped.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}
