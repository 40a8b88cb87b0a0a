package browser

// Fields the actions need in browser.go (added there, with their
// initialisation, as the one exception to file ownership):
//
//	Session.tabs *tabTracker  // NewSession: newTabTracker(ctx, &inc) (its error disposes the context); Close: defer s.tabs.stop()
//	Page.tab     *pageTab     // NewPage: s.tabs.adopt(ctx, pg, opts) before returning pg
//
// The tracker follows the session's tabs (popups included) and routes
// their events (network, loading, JavaScript dialogs) to each page's
// pageTab, which settling, dialogs and tab actions read.
