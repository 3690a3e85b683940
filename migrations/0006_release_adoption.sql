CREATE TABLE `release_adoption` (
	`release_id` integer NOT NULL,
	`day` text NOT NULL,
	`stage` integer NOT NULL,
	`platform` text NOT NULL,
	`install` text NOT NULL,
	PRIMARY KEY(`release_id`, `day`, `stage`, `platform`, `install`),
	FOREIGN KEY (`release_id`) REFERENCES `product_releases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `release_adoption_day` ON `release_adoption` (`day`);