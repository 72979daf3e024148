package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// replayDead applies the spools that dead processes left in the spool
// directory, then deletes them. It returns how many writes it applied.
func (j *Journal) replayDead(ctx context.Context) (int, error) {
	dead, err := deadSpools(j.opts.SpoolDir, j.opts.InstanceID)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, d := range dead {
		var ents []*spooled
		for _, seg := range d.segments {
			ws, skipped, err := readSegment(seg)
			if err != nil {
				return total, err
			}
			if skipped > 0 {
				j.opts.Logger.Warn("journal: a spool segment ends in a torn write (the process died while writing it); the bytes after the last whole write are ignored",
					"file", seg, "bytes", skipped)
			}
			for i := range ws {
				ents = append(ents, &ws[i])
			}
		}
		n, err := j.replayGroups(ctx, d.instance, mergeSpooled(ents))
		total += n
		if err != nil {
			return total, err
		}
		if err := d.remove(j.opts.SpoolDir); err != nil {
			return total, fmt.Errorf("journal: remove the applied spool of instance %s: %w", d.instance, err)
		}
		if len(ents) > 0 {
			j.opts.Logger.Info("journal: applied the spool a dead process left", "instance_id", d.instance, "writes", len(ents))
		}
	}
	return total, nil
}

// replayGroups applies a dead spool's writes. A write the store refuses on
// its own while it answers otherwise is set aside (INSTANCE.rejected) so
// that one bad write cannot keep the server from starting; a store that
// does not answer fails the start.
func (j *Journal) replayGroups(ctx context.Context, instance string, groups []*mergedWrite) (int, error) {
	applied := 0
	apply := func(gs []*mergedWrite) error {
		ws := make([]Write, len(gs))
		for i, g := range gs {
			ws[i] = g.w
		}
		unchanged, err := j.store.Apply(ctx, ws)
		if err == nil {
			applied += len(ws) - len(unchanged)
		}
		return err
	}
	for lo := 0; lo < len(groups); lo += j.opts.MaxBatch {
		chunk := groups[lo:min(lo+j.opts.MaxBatch, len(groups))]
		err := apply(chunk)
		if err == nil {
			continue
		}
		if _, aerr := j.store.Alive(ctx, j.opts.InstanceID); aerr != nil {
			return applied, fmt.Errorf("journal: apply the spool of instance %s: %w", instance, err)
		}
		for _, g := range chunk {
			if gerr := apply([]*mergedWrite{g}); gerr != nil {
				werr := appendRejected(j.opts.SpoolDir, instance, g.frames())
				j.opts.Logger.Error("journal: the store refuses a write of a dead process's spool; it was set aside",
					"execution_id", g.w.Record.ID, "err", gerr, "file", rejectedPath(j.opts.SpoolDir, instance), "write_err", werr)
				if werr != nil {
					return applied, fmt.Errorf("journal: set aside a refused write of instance %s: %w", instance, werr)
				}
			}
		}
	}
	return applied, nil
}

func rejectedPath(dir, instance string) string { return filepath.Join(dir, instance+".rejected") }

func appendRejected(dir, instance string, frames []byte) error {
	f, err := os.OpenFile(rejectedPath(dir, instance), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(frames); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
