package explore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// buildMarker is the file Build (and scripts/build-web.sh) leaves in a
// folder it builds into, so a later --rebuild knows the page files there
// are its own and not the user's.
const buildMarker = ".stride-explore"

// claimBuildDir makes dir a folder explore may build into, or refuses: it
// must be new, empty, or hold only the page files of an earlier build
// together with the marker that build left. Anything else (a user's own
// index.html, any other file) means the folder is not explore's to write.
func claimBuildDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("explore: %v", err)
		}
	} else if err != nil {
		return fmt.Errorf("explore: %v", err)
	}
	marked := false
	for _, e := range entries {
		if e.Name() == buildMarker && e.Type().IsRegular() {
			marked = true
		}
	}
	for _, e := range entries {
		ours := e.Name() == buildMarker || (marked && e.Type().IsRegular() &&
			(slices.Contains(siteFiles, e.Name()) || e.Name() == "layout.wasm.tmp"))
		if !ours {
			return fmt.Errorf("explore: %s holds %s, which explore did not write; build into a new or empty folder (--dir) instead", dir, e.Name())
		}
	}
	if marked {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, buildMarker), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("explore: %v", err)
	}
	_, err = f.WriteString("built by infer explore (scripts/build-web.sh); explore rebuilds only folders holding this file\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("explore: %v", err)
	}
	return nil
}

// openSiteFile opens one of the page's files in dir. Any other name, a
// symlink, or anything but a regular file is refused: the folder may hold
// other things, and a symlink may lead out of it. The file opened is
// checked to be the one inspected, so a swap in between is refused too.
func openSiteFile(dir, name string) (*os.File, os.FileInfo, error) {
	if !slices.Contains(siteFiles, name) {
		return nil, nil, os.ErrNotExist
	}
	path := filepath.Join(dir, name)
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if !lst.Mode().IsRegular() {
		return nil, nil, os.ErrNotExist
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !os.SameFile(lst, st) {
		f.Close()
		return nil, nil, os.ErrNotExist
	}
	return f, st, nil
}
