package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// mediaCmd is `wayfinder media get MEDIA_ID -o FILE`.
func mediaCmd(ctx context.Context, s *session, args []string) (int, error) {
	if len(args) == 0 || args[0] != "get" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(s.env.Stderr, "usage: wayfinder media get MEDIA_ID -o FILE   (-o - writes to stdout)")
			return exitOK, nil
		}
		return 0, usageErrorf("usage: wayfinder media get MEDIA_ID -o FILE")
	}
	s.prefix += " get"
	var out string
	fs := s.flags("media get", "media get MEDIA_ID -o FILE   (-o - writes to stdout)")
	fs.StringVar(&out, "o", "", "file to write (- for stdout); required")
	pos, err := s.parse(fs, args[1:])
	if err != nil {
		return 0, err
	}
	id, err := oneArg(pos, "MEDIA_ID")
	if err != nil {
		return 0, err
	}
	if out == "" {
		return 0, usageErrorf("-o FILE is required (- writes to stdout)")
	}
	if err := s.connect(); err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	body, err := s.runs.GetMedia(cctx, &wfv1.GetMediaRequest{MediaId: id})
	if err != nil {
		return 0, err
	}
	if out == "-" {
		_, err := s.env.Stdout.Write(body.GetData())
		return exitOK, err
	}
	if err := writeFile(out, body.GetData()); err != nil {
		return 0, err
	}
	if s.json {
		fmt.Fprintf(s.env.Stdout, "{\"media_id\":%q,\"content_type\":%q,\"bytes\":%d,\"path\":%q}\n", id, body.GetContentType(), len(body.GetData()), out)
		return exitOK, nil
	}
	fmt.Fprintf(s.env.Stdout, "wrote %s (%s, %s bytes)\n", out, body.GetContentType(), formatCount(int64(len(body.GetData()))))
	return exitOK, nil
}

// writeFile writes data to name through a temporary file in the same
// directory, so a failed download never leaves half a file.
func writeFile(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+strings.TrimPrefix(filepath.Base(name), ".")+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, name)
	}
	if werr != nil {
		_ = os.Remove(tmp)
	}
	return werr
}
