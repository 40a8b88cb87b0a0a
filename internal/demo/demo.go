// Package demo is what `wayfinder demo` (and `make demo`) runs: a small
// bundled web app served on loopback (a login, a dashboard and an expense
// form), and a client that submits a multi-step task over the REST API,
// follows its events, and prints the result.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ServeSite serves the demo site on an ephemeral loopback port until ctx is
// done and returns its base URL.
func ServeSite(ctx context.Context) (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen for the demo site: %w", err)
	}
	srv := &http.Server{Handler: newSite().handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + lis.Addr().String() + "/", nil
}

// Result is what the demo learned about its run.
type Result struct {
	RunID          string
	Status         string
	ScreenshotURL  string
	ScreenshotFile string
}

// Run submits a run for startURL to the REST API at httpAddr (with apiKey
// when the server requires keys; empty in local mode), prints its events
// to out as they arrive, and saves the final screenshot in outDir.
func Run(ctx context.Context, httpAddr, apiKey, startURL, outDir string, out io.Writer) (*Result, error) {
	base := "http://" + httpAddr
	body, _ := json.Marshal(map[string]any{
		"goal":            Goal,
		"start_url":       startURL,
		"allowed_domains": []string{"127.0.0.1"},
		"labels":          map[string]string{"source": "demo"},
	})
	fmt.Fprintf(out, "POST %s/v1/runs\n", base)
	var run struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := call(ctx, apiKey, http.MethodPost, base+"/v1/runs", body, &run); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "run %s %s\n\nevents (GET %s/v1/runs/%s/events):\n", run.ID, run.Status, base, run.ID)

	req, err := newRequest(ctx, apiKey, http.MethodGet, base+"/v1/runs/"+run.ID+"/events", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("stream events: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Result struct {
				Sequence string `json:"sequence"`
				Type     string `json:"type"`
				Message  string `json:"message"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("decode event %q: %w", sc.Text(), err)
		}
		fmt.Fprintf(out, "  #%s %-30s %s\n", line.Result.Sequence, line.Result.Type, line.Result.Message)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}

	var final struct {
		ID                     string `json:"id"`
		Status                 string `json:"status"`
		FinalScreenshotMediaID string `json:"final_screenshot_media_id"`
		FinalURL               string `json:"final_url"`
		StepCount              int    `json:"step_count"`
		Summary                string `json:"summary"`
		Usage                  *struct {
			InputTokens  string  `json:"input_tokens"`
			OutputTokens string  `json:"output_tokens"`
			CostUSD      float64 `json:"cost_usd"`
			ModelCalls   int     `json:"model_calls"`
		} `json:"usage"`
		Error *struct {
			Category string `json:"category"`
			Message  string `json:"message"`
		} `json:"error"`
	}
	if err := call(ctx, apiKey, http.MethodGet, base+"/v1/runs/"+run.ID, nil, &final); err != nil {
		return nil, err
	}
	res := &Result{RunID: final.ID, Status: final.Status}
	fmt.Fprintf(out, "\nresult: %s after %d steps (final URL %s)\n", final.Status, final.StepCount, final.FinalURL)
	if final.Summary != "" {
		fmt.Fprintf(out, "summary: %s\n", final.Summary)
	}
	if u := final.Usage; u != nil {
		if u.InputTokens == "" && u.OutputTokens == "" {
			fmt.Fprintf(out, "model: %d calls to the offline step controller (no tokens, no cost)\n", u.ModelCalls)
		} else {
			fmt.Fprintf(out, "model: %d calls, %s input + %s output tokens, $%.4f\n", u.ModelCalls, u.InputTokens, u.OutputTokens, u.CostUSD)
		}
	}
	if final.Error != nil {
		fmt.Fprintf(out, "error: %s: %s\n", final.Error.Category, final.Error.Message)
	}
	if final.FinalScreenshotMediaID != "" {
		res.ScreenshotURL = base + "/v1/media/" + final.FinalScreenshotMediaID
		img, err := fetch(ctx, apiKey, res.ScreenshotURL)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return nil, err
		}
		res.ScreenshotFile = filepath.Join(outDir, "demo-screenshot.png")
		if err := os.WriteFile(res.ScreenshotFile, img, 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "screenshot: %s (%d bytes, saved to %s)\n", res.ScreenshotURL, len(img), res.ScreenshotFile)
	}
	return res, nil
}

// newRequest is a request to the API, with the API key when there is one.
func newRequest(ctx context.Context, apiKey, method, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	return req, nil
}

func call(ctx context.Context, apiKey, method, url string, body []byte, out any) error {
	req, err := newRequest(ctx, apiKey, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, raw)
	}
	return json.Unmarshal(raw, out)
}

func fetch(ctx context.Context, apiKey, url string) ([]byte, error) {
	req, err := newRequest(ctx, apiKey, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
