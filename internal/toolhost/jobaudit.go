package toolhost

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/tools"
)

// jobAuditEvery is how often serve closes the records of lost jobs and
// drops the results past their account's retention.
const jobAuditEvery = 30 * time.Second

// startJobAudit runs the job audit every jobAuditEvery until the app
// closes: every process does, since both of its parts change a record
// only once, whichever process gets to it first.
func (a *App) startJobAudit() {
	audit := a.exec.NewJobAudit(tools.DefaultLostJobGrace)
	a.every(jobAuditEvery, false, func(ctx context.Context) { a.auditJobs(ctx, audit) })
}

// auditJobs runs one pass of the job audit and logs what it did.
func (a *App) auditJobs(ctx context.Context, audit *tools.JobAudit) {
	ctx, cancel := context.WithTimeout(ctx, jobAuditEvery)
	defer cancel()
	logger := a.o.Logger
	if audit != nil {
		if n, err := audit.Check(ctx); err != nil {
			logger.WarnContext(ctx, "job audit: lost jobs", "error", err, "closed", n)
		} else if n > 0 {
			logger.InfoContext(ctx, "job audit: closed the records of lost jobs", "closed", n)
		}
	}
	n, err := a.db.ExpireJobResults(ctx, a.exec.Clock()())
	if err != nil {
		logger.WarnContext(ctx, "job audit: result retention", "error", err, "expired", n)
	} else if n > 0 {
		logger.InfoContext(ctx, "job audit: dropped job results past their retention", "expired", n)
	}
}
