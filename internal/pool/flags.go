package pool

import "os"

// chromiumFlags is the one place that decides how Chromium is started:
// headless, quiet on a closed network (no background networking, component
// updates, QUIC or first-run work), and without the sandbox when running as
// root (Chromium refuses to start otherwise). Downloads are denied per
// context when it is created (see cdpClient), since a flag cannot reach
// incognito contexts.
//
// Site isolation is off (--disable-site-isolation-trials and the
// IsolateOrigins and site-per-process features): cross-origin iframes then
// live in their page's renderer and CDP session, which the snapshot relies
// on to see into them; each run is still isolated from the others by its own
// browser context.
func chromiumFlags(userDataDir string) []string {
	flags := []string{
		"--headless=new",
		"--remote-debugging-port=0",
		"--remote-debugging-address=127.0.0.1",
		"--user-data-dir=" + userDataDir,
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-quic",
		"--disable-breakpad",
		"--disable-crash-reporter",
		"--disable-domain-reliability",
		"--disable-client-side-phishing-detection",
		"--disable-default-apps",
		"--disable-extensions",
		"--disable-site-isolation-trials",
		"--disable-features=IsolateOrigins,site-per-process,Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater",
		"--disable-gpu",
		// WebRTC's UDP would bypass the run's network guard proxy.
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--disable-dev-shm-usage",
		"--disable-background-timer-throttling",
		"--disable-renderer-backgrounding",
		"--disable-backgrounding-occluded-windows",
		"--metrics-recording-only",
		"--mute-audio",
		"--password-store=basic",
		"--use-mock-keychain",
		"--hide-scrollbars",
		"about:blank",
	}
	if os.Geteuid() == 0 {
		flags = append(flags, "--no-sandbox")
	}
	return flags
}
