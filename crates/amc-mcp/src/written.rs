//! A relay page's tool result as written on the wire, and the last one kept for the
//! waiters a post wakes with the same page (see `direct.rs`).

use std::sync::{Arc, Mutex};

use amc_relay::Page;
use rmcp::model::ServerResult;

/// What rmcp's `handle_request` makes of a tool's response for a peer before 2026-07-28.
pub(crate) fn result_of(response: rmcp::model::CallToolResponse) -> ServerResult {
    let mut result = ServerResult::from(response);
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    result
}

/// The last page a server answered directly and its `result`, as written. The waiters a
/// post wakes are mostly given the same page (the same messages, cursor and flags): each
/// of them then writes its id around the same bytes instead of turning the page into JSON
/// three times (as a value, as pretty text, and the answer around both). Keyed by the
/// whole page, so only an equal page ever gets these bytes. A cheap `Clone` handle: the
/// `RelayServer` that answers holds it, and its clones share it.
#[derive(Clone, Default)]
pub(crate) struct LastPage(Arc<Mutex<Option<Written>>>);

/// A page and its `result` as written.
struct Written {
    page: Page,
    result: Arc<[u8]>,
}

impl LastPage {
    /// `page`'s `result` as written: the one kept if it is the same page, else written
    /// now and kept.
    pub(crate) fn result(&self, page: Page) -> Option<Arc<[u8]>> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(written) = kept.as_ref().filter(|w| w.page == page) {
            return Some(written.result.clone());
        }
        // Written outside the lock: the waiters given other pages need not wait for it.
        drop(kept);
        let value = serde_json::to_value(&page).ok()?;
        let response = rmcp::model::CallToolResponse::from(crate::server::success(value));
        let result: Arc<[u8]> = serde_json::to_vec(&result_of(response)).ok()?.into();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Written { page, result: result.clone() });
        Some(result)
    }
}
