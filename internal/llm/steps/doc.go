// Package steps is the offline step controller: a deterministic llm.Model
// (provider "steps") that runs a goal written as plain steps, one per line
// or sentence, without a language model. It is the controller when no model
// key is configured, and it lets regression suites run free and the same
// way every time.
//
// Parse reads the script; New builds a Model for one run. Each call to
// Complete reads the outcome of the previous tool call from the
// conversation, looks at the structured page (llm.Request.Observation),
// resolves the current step's target against the page's elements by role
// and accessible name, and answers with exactly one tool call.
//
// # Grammar
//
// Steps are case-insensitive. Names and values may be quoted ("…", '…',
// “…”), which is how to write one that contains a keyword ("into", "with",
// "from") or a sentence break. List markers ("1.", "2)", "(3)", "Step 4:",
// "-", "*", "•") and connectors ("Then", "And then", "Next,", "Finally,")
// are ignored; blank lines and lines starting with "#" or "//" are skipped,
// and so is a line ending in ":" that is not a step (a heading such as
// "Steps:"). A line may hold several steps separated by ". ", "; ", ", ",
// " then " or " and " when each part is a step on its own.
//
//	Click <name>                       also Tap, Press/Push/Hit <name>,
//	                                   "Click the <name> button|link|tab",
//	                                   Open|Select|Go to the <name> link|tab|menu|page
//	Type <value> into|in <field>       also Enter|Input|Write <value> in <field>;
//	                                   without a field: the focused field
//	Fill [in] <field> with <value>     also Set <field> to <value>; Clear <field>
//	Select <option> from|in <field>    also Choose, Pick
//	Check <name> / Uncheck <name>      also Tick, Untick
//	Press <key>                        Enter, Tab, Escape, ArrowDown, Control+A, "Tab Tab"
//	Open <url-or-path>                 also Go to, Navigate to, Visit; a path
//	                                   (/reports, ../x, ?q=1) resolves against the page's URL
//	Wait for <text> [to appear]        also Wait until <text> appears
//	Wait <n> [seconds|ms|minutes]      also Wait for <n> seconds
//	Expect text <text>                 also Expect to see <text>, Expect "<text>",
//	                                   Expect the page to show|contain <text>
//	Expect URL <pattern>               a substring of the URL, or a glob with *
//	Expect title <text>                the title contains the text
//	Scroll down|up|to the top|to the bottom
//
// Verify, Assert, Ensure, Confirm, Make sure and Check that are synonyms of
// Expect.
package steps
