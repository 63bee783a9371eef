#!/usr/bin/env bats
# mt-view (issue 21): a viewer for the trace on this machine. Real parts
# only: mt-view's own server on loopback, speedscope as npm installs it,
# and Debian's Chromium, headless, loading the page as a user's browser
# does. Oracles: what the browser built (speedscope's profile view, named
# after the file, appears only once a profile has been imported; a broken
# profile shows none), what the server answers, and the kernel's own list
# of listening sockets.

load helpers
bats_require_minimum_version 1.5.0

VIEW=$MT_BIN/mt-view

# start_view FILE [OPTION...]: mt-view in the background; URL and PORT set
start_view() {
	"$VIEW" --no-open "${@:2}" "$1" > "$BATS_TEST_TMPDIR/url" 2> "$BATS_TEST_TMPDIR/view.err" &
	VIEW_PID=$!
	for _ in $(seq 100); do
		[ -s "$BATS_TEST_TMPDIR/url" ] && break
		kill -0 "$VIEW_PID" 2> /dev/null || break
		sleep 0.1
	done
	URL=$(head -1 "$BATS_TEST_TMPDIR/url")
	PORT=$(sed -n 's,^http://127\.0\.0\.1:\([0-9]*\)/.*,\1,p' <<< "$URL")
	[ -n "$PORT" ] || { cat "$BATS_TEST_TMPDIR/view.err"; false; }
}

stop_view() {
	kill -INT "$VIEW_PID"
	wait "$VIEW_PID"
}

teardown() {
	[ -z "${VIEW_PID:-}" ] || kill "$VIEW_PID" 2> /dev/null || true
}

# the DOM headless Chromium made of the page, after its scripts ran
browse() {
	timeout "${2:-60}" chromium --headless --no-sandbox --disable-gpu --user-data-dir="$BATS_TEST_TMPDIR/chrome" \
		--dump-dom --virtual-time-budget=15000 "$1" 2> /dev/null
}

# speedscope's profile view: the view switcher and the profile's name
profile_shown() { # DOM NAME
	grep -q 'Time Order' "$1"
	grep -q 'Left Heavy' "$1"
	grep -q "<title>$2 - speedscope</title>" "$1"
}

@test "speedscope in Chromium imports the trace mt-view serves: a stream, a perf.data decoded on the way, folded stacks" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	start_view flow.ev
	[[ "$URL" == "http://127.0.0.1:$PORT/#profileURL=http%3A%2F%2F127.0.0.1%3A$PORT%2Ftrace.json&title=flow.ev" ]]
	browse "$URL" > dom
	profile_shown dom flow.ev
	stop_view
	grep -q 'stopped ([1-9][0-9]* files served' view.err # the page, its scripts, the trace
	# the perf.data itself
	cp "$MT_FIXTURES/flow/tsc.data" flow.data
	start_view flow.data
	browse "$URL" > dom
	profile_shown dom flow.data
	stop_view
	# folded stacks, made by mt-toperfetto
	"$MT_BIN/mt-toperfetto" -o flow.folded flow.ev
	start_view flow.folded
	[[ "$URL" == *"%2Ftrace.folded&title=flow.folded" ]]
	browse "$URL" > dom
	profile_shown dom flow.folded
	stop_view
}

@test "a broken profile shows no profile view (the check above can fail)" {
	cd "$BATS_TEST_TMPDIR"
	printf '{"traceEvents": [{"ph": "Q"' > broken.json
	start_view broken.json
	# speedscope says it failed in an alert, which headless Chromium never
	# closes: it is stopped, and what it had built is read
	browse "$URL" 20 > dom || true
	! grep -q 'Time Order' dom || false
	stop_view
}

@test "mt-view serves on loopback only, and only the viewer's files and the trace" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	# a viewer directory of our own, with a way out planted in it
	mkdir -p www/sub
	echo '<html>viewer</html>' > www/index.html
	echo 'js' > www/sub/app.js
	echo 'secret' > secret.txt
	ln -s "$PWD/secret.txt" www/out.txt
	mkdir tmp
	TMPDIR=$PWD/tmp MT_SPEEDSCOPE_DIR=$PWD/www start_view flow.ev
	[ "$(ls tmp | wc -l)" -eq 1 ] # the trace made for the viewer
	ss -Hltn "sport = :$PORT" > sockets
	cat sockets
	[ "$(wc -l < sockets)" -eq 1 ]
	grep -q "127.0.0.1:$PORT" sockets
	code() { curl -s --path-as-is -o /dev/null -w '%{http_code}' "$@"; }
	[ "$(code "http://127.0.0.1:$PORT/")" = 200 ]
	[ "$(curl -s "http://127.0.0.1:$PORT/")" = '<html>viewer</html>' ]
	[ "$(code "http://127.0.0.1:$PORT/sub/app.js")" = 200 ]
	[ "$(code "http://127.0.0.1:$PORT/trace.json")" = 200 ]
	curl -s "http://127.0.0.1:$PORT/trace.json" | python3 -c 'import json, sys; assert json.load(sys.stdin)["traceEvents"]'
	for p in /../secret.txt /sub/../../secret.txt /%2e%2e/secret.txt /out.txt /sub/ /sub //etc/passwd /etc/passwd \
		"/$(basename "$PWD")/flow.ev" /flow.ev; do
		[ "$(code "http://127.0.0.1:$PORT$p")" = 404 ] || { echo "served $p"; false; }
	done
	[ "$(code -X POST "http://127.0.0.1:$PORT/")" = 405 ]
	[ "$(code -I "http://127.0.0.1:$PORT/trace.json")" = 200 ]
	stop_view
	# ... a temporary file: gone with ^C
	[ -z "$(ls -A tmp)" ]
}

@test "MT_PERFETTO_DIR: that UI is served with a Perfetto trace of the file" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" > flow.ev
	mkdir ui && echo '<html>perfetto</html>' > ui/index.html
	MT_PERFETTO_DIR=$PWD/ui start_view flow.ev
	[[ "$URL" == "http://127.0.0.1:$PORT/#!/?url=http%3A%2F%2F127.0.0.1%3A$PORT%2Ftrace.pftrace" ]]
	[ "$(curl -s "http://127.0.0.1:$PORT/")" = '<html>perfetto</html>' ]
	curl -s -o got.pftrace "http://127.0.0.1:$PORT/trace.pftrace"
	"$MT_BIN/mt-toperfetto" -o want.pftrace flow.ev
	cmp got.pftrace want.pftrace
	stop_view
	# a .pftrace as it is
	MT_PERFETTO_DIR=$PWD/ui start_view want.pftrace
	curl -s -o again.pftrace "http://127.0.0.1:$PORT/trace.pftrace"
	cmp again.pftrace want.pftrace
	stop_view
}

@test "mt-view: a .pftrace without a Perfetto UI, a missing file, no viewer, a port taken, usage" {
	cd "$BATS_TEST_TMPDIR"
	"$PT2EVENTS" "$MT_FIXTURES/flow/tsc.data" | "$MT_BIN/mt-symbolize" | "$MT_BIN/mt-toperfetto" -o t.pftrace
	run "$VIEW" --no-open t.pftrace
	[ "$status" -eq 1 ]
	[[ "$output" == *"speedscope does not read Perfetto traces"* ]]
	run "$VIEW" --no-open nothing.ev
	[ "$status" -eq 1 ]
	[[ "$output" == "mt-view: nothing.ev: No such file or directory" ]]
	MT_SPEEDSCOPE_DIR=$PWD/none run "$VIEW" --no-open t.pftrace
	[ "$status" -eq 1 ]
	[[ "$output" == *"speedscope is not installed"* ]]
	echo 'x;y 1' > a.folded
	start_view a.folded
	run "$VIEW" --no-open --port="$PORT" a.folded
	[ "$status" -eq 1 ]
	[[ "$output" == *"127.0.0.1:$PORT: Address already in use"* ]]
	stop_view
	run "$VIEW"
	[ "$status" -eq 2 ]
	run "$VIEW" --port=70000 a.folded
	[ "$status" -eq 2 ]
	# a file that cannot be decoded: said, no server
	echo 'not a trace' > junk
	run "$VIEW" --no-open junk
	[ "$status" -eq 1 ]
	[[ "$output" == *"could not be converted"* ]]
}

@test "mt-trace decode ends with the mt-view command that views its trace, and that command works" {
	cd "$BATS_TEST_TMPDIR"
	cp "$MT_FIXTURES/flow/tsc.data" rec.data
	PATH=$MT_BIN:$PATH "$BATS_TEST_DIRNAME/../pipelines/mt-trace" decode -o t.pftrace rec.data 2> err
	cat err
	grep -q "^mt-trace: wrote $PWD/t.pftrace ([0-9]* bytes)$" err
	cmd=$(sed -n 's/^mt-trace: view it here: //p' err)
	[ "$cmd" = "mt-view $PWD/rec.data" ]
	start_view "${cmd#mt-view }"
	browse "$URL" > dom
	profile_shown dom rec.data
	stop_view
	PATH=$MT_BIN:$PATH "$BATS_TEST_DIRNAME/../pipelines/mt-trace" decode -o t.json rec.data 2> err
	grep -qx "mt-trace: view it here: mt-view $PWD/t.json" err
}
