CREATE TABLE `release_sessions` (
	`product_id` integer NOT NULL,
	`install` text NOT NULL,
	`session_id` text NOT NULL,
	`release_id` integer NOT NULL,
	`day` text NOT NULL,
	`platform` text NOT NULL,
	`status` integer NOT NULL,
	`started_at` text NOT NULL,
	`duration_ms` integer,
	`address` text NOT NULL,
	`licensed` integer NOT NULL,
	PRIMARY KEY(`product_id`, `install`, `session_id`),
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`release_id`) REFERENCES `product_releases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `release_sessions_release_day` ON `release_sessions` (`release_id`,`day`,`address`);--> statement-breakpoint
CREATE INDEX `release_sessions_install_day` ON `release_sessions` (`product_id`,`install`,`day`);--> statement-breakpoint
CREATE INDEX `release_sessions_day` ON `release_sessions` (`day`);