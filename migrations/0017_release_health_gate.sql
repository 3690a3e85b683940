CREATE TABLE `install_crash_loops` (
	`product_id` integer NOT NULL,
	`install` text NOT NULL,
	`release_id` integer NOT NULL,
	`version` text NOT NULL,
	`since` text NOT NULL,
	PRIMARY KEY(`product_id`, `install`),
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`release_id`) REFERENCES `product_releases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `install_crash_loops_since` ON `install_crash_loops` (`product_id`,`since`);--> statement-breakpoint
ALTER TABLE `product_releases` ADD `health_gate` text;--> statement-breakpoint
ALTER TABLE `release_sessions` ADD `counted` integer DEFAULT true NOT NULL;