DROP INDEX `release_sessions_release_day`;--> statement-breakpoint
CREATE INDEX `release_sessions_release_day` ON `release_sessions` (`release_id`,`day`,`address`,`licensed`,`counted`,`install`);